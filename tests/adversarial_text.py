"""Strings that tokenizers get wrong in different ways (Turkish İ, ß, Greek final sigma, Vietnamese,
Arabic and Devanagari marks, full-width forms, ligatures, special tokens written in the text, control
and zero-width characters, over-long words, empty text): the tokenizer-option tests and the ONNX
export's tokenizer.json tests compare tokenizers on them."""

ADVERSARIAL = [
    "[MASK\u0301] x[MASK\u0301] [SEP\u0301]\u0301 \u0301",
    "İstanbul'da İİ ı I KIRMIZI İi",
    "Straße STRASSE ß ẞ groß",
    "ΟΔΟΣ Σοφία ΣΊΣΥΦΟΣ σς ΑΣ. ΑΣ\x01Α",
    "Tiếng Việt có dấu: người, được, Đà Nẵng",
    "اَلْعَرَبِيَّةُ لغة عربية",
    "हिन्दी भाषा क़ ज़",
    "Ｆｕｌｌｗｉｄｔｈ　ＡＢＣ　１２３！？",
    "ﬁnance ﬂow ﬀ Æsop œuvre",
    "a [MASK] b[SEP]c [CLS][PAD] [UNK]x [mask] [Mask] [MA\x00SK] [MASK\u0301] [[MASK]]",
    "[MA\x00SK] x\u200b[SEP]\u200b",
    "ctrl\x00\x01\x7f\u200b\u200d\ufeff chars\u00ad soft\ue000pua\tTab\r\nnl \u2028sep\u2029end",
    "e\u0301 é Å Å \u212a K Й Й",
    "日本語の文 中文字符 한국어 漢字交じり 丽",
    "Йод ёлка ЁЖИК Й й Ёё",
    "x" * 120,
    "й" * 101,
    "각 ᅮᅮ ㄱㄴ 한글 힣",
    "",
    "   ",
]
