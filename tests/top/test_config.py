import json

import pytest

from kbert import BertConfig, BertEncoder, ConfigError, PRESETS
from conftest import SHARED


@pytest.mark.parametrize(
    "name, layers, hidden, heads",
    [("tiny", 2, 128, 2), ("mini", 4, 256, 4), ("small", 4, 512, 8), ("medium", 8, 512, 8),
     ("base", 12, 768, 12), ("large", 24, 1024, 16)],
)
def test_presets_follow_the_published_sizes(name, layers, hidden, heads):
    c = BertConfig.preset(name)
    assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads) == (layers, hidden, heads)
    assert c.intermediate_size == 4 * hidden
    assert c.vocab_size == 30522


@pytest.mark.slow
@pytest.mark.parametrize("name, expected", [("base", 109_482_240), ("large", 335_141_888)])
def test_parameter_counts_match_the_paper(name, expected):
    assert BertEncoder(BertConfig.preset(name)).count_params() == expected


@pytest.mark.slow
def test_parameter_count_matches_closed_form():
    # Independent count from the architecture's formula, for every preset but the big two.
    for name in ("tiny", "mini", "small", "medium"):
        c = BertConfig.preset(name)
        H, I, V, P, T, L = (c.hidden_size, c.intermediate_size, c.vocab_size,
                            c.max_position_embeddings, c.type_vocab_size, c.num_hidden_layers)
        emb = (V + P + T) * H + 2 * H
        block = 4 * (H * H + H) + 2 * H + (H * I + I) + (I * H + H) + 2 * H
        assert BertEncoder(c).count_params() == emb + L * block + H * H + H, name


def test_reads_and_writes_googles_bert_config_json(tmp_path):
    path = SHARED / "vocab" / "bert-base-uncased" / "bert_config.json"
    original = json.loads(path.read_text())
    config = BertConfig.from_json_file(path)
    assert config == BertConfig.preset("base")
    out = tmp_path / "bert_config.json"
    config.to_json_file(out)
    assert json.loads(out.read_text()) == original  # the same fields and values, nothing added


def test_extra_google_fields_are_accepted():
    config = BertConfig.from_json_file(SHARED / "vocab" / "chinese" / "bert_config.json")
    assert config.vocab_size == 21128


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"hidden_size": 100, "num_attention_heads": 12}, "hidden_size"),
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
        ({"vocab_size": -5}, "vocab_size"),
        ({"intermediate_size": 3.5}, "intermediate_size"),
        ({"hidden_act": "gelu_fancy"}, "hidden_act"),
        ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob"),
    ],
)
def test_invalid_configs_name_the_field(overrides, field):
    with pytest.raises(ConfigError, match=field):
        BertConfig(**overrides)


def test_invalid_config_file_names_the_file(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({**BertConfig().to_dict(), "num_attention_heads": 7}))
    with pytest.raises(ConfigError, match=r"hidden_size.*divisible.*num_attention_heads.*bert_config.json"):
        BertConfig.from_json_file(path)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        BertConfig.from_json_file(path)
    path.write_text(json.dumps({"hidden_size": 128}))
    with pytest.raises(ConfigError, match="missing field.*vocab_size"):
        BertConfig.from_json_file(path)


def test_unknown_preset_lists_the_choices():
    with pytest.raises(ConfigError, match="tiny, mini"):
        BertConfig.preset("huge")
    assert set(PRESETS) == {"tiny", "mini", "small", "medium", "base", "large"}


def test_activation_aliases():
    assert BertConfig(hidden_act="gelu_new").hidden_act == "gelu"
    assert BertConfig(hidden_act="gelu_erf").hidden_act == "gelu_exact"
