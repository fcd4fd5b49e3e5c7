"""What a command started by tests/zygote.py sees (tests/test_zygote.py runs it as ``python -m zygote_probe``)."""

import json
import os
import sys
import time

if __name__ == "__main__":
    preloaded = "tensorflow" in sys.modules
    mode, status = sys.argv[1], int(sys.argv[2])
    if mode == "sleep":
        pid_file = sys.argv[3]
        with open(pid_file, "w") as f:
            f.write(str(os.getpid()))
        time.sleep(120)
    print(json.dumps({"preloaded": preloaded, "argv": sys.argv[1:], "cwd": os.getcwd(), "path0": sys.path[0],
                      "probe": os.environ.get("PROBE"), "stdin": sys.stdin.read(), "main": __name__}))
    print("to stderr", file=sys.stderr)
    sys.exit(status)
