#!/usr/bin/env bash
# The system packages the test suite needs beyond pip: a CJK font (the Japanese attention PNG's
# glyphs) and headless Chromium (the attention page's browser test). Debian/Ubuntu, as root: installs
# what is missing (quietly; nothing to do when both are there). Elsewhere: says what to install and
# goes on, so the pip step still runs (the PNG test then fails and the browser test skips).
set -euo pipefail

missing=()
fc-list 2>/dev/null | grep -q "Noto Sans CJK" || missing+=(fonts-noto-cjk)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-system-deps: not root on Debian/Ubuntu; install ${missing[*]} with your package manager" \
         "(Debian: sudo apt-get install ${missing[*]}) for the tests that need them" >&2
    exit 0
fi
echo "install-system-deps: apt-get install ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" fontconfig >/dev/null
fc-cache -f >/dev/null 2>&1 || true
