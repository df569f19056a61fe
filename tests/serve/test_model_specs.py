"""What `keras-bert serve` serves from its arguments: folders, TF Serving's layout of versions,
models.config policies and labels, and a clear error for each thing that is not a model."""

import pytest

from keras_bert_lib.serve import model_specs


def _versions(base, *numbers):
    for number in numbers:
        (base / str(number)).mkdir(parents=True)
        (base / str(number) / "saved_model.pb").write_bytes(b"")
    return base


def test_folders_give_names_and_the_highest_version(tmp_path):
    _versions(tmp_path / "exported" / "saved_model", 1, 3, 2)
    _versions(tmp_path / "embedder", 7)
    specs = model_specs([str(tmp_path / "exported" / "saved_model"), f"e={tmp_path / 'embedder' / '7'}"])
    assert [(s.name, s.versions) for s in specs] == [
        ("exported", {3: str(tmp_path / "exported" / "saved_model" / "3")}),
        ("e", {7: str(tmp_path / "embedder" / "7")})]


def test_models_config_policies_and_labels(tmp_path):
    base = _versions(tmp_path / "m", 1, 2, 3)
    config = tmp_path / "models.config"

    def specs(policy, labels=""):
        config.write_text('model_config_list { config { name: "m" base_path: "%s" model_platform: "tensorflow" '
                          'model_version_policy { %s } %s } }' % (base, policy, labels))
        return model_specs([], str(config))[0]

    assert sorted(specs("latest { num_versions: 2 }").versions) == [2, 3]
    assert sorted(specs("all {}").versions) == [1, 2, 3]
    spec = specs("specific { versions: 1 versions: 3 }", 'version_labels { key: "stable" value: 1 }')
    assert sorted(spec.versions) == [1, 3] and spec.labels == {"stable": 1} and spec.default == 3
    with pytest.raises(ValueError, match=r"asks for versions \[4\], which .* lacks \(it has \[1, 2, 3\]\)"):
        specs("specific { versions: 4 }")
    with pytest.raises(ValueError, match=r"labels \{'canary': 1\} name versions it does not serve \(\[3\]\)"):
        specs("latest { num_versions: 1 }", 'version_labels { key: "canary" value: 1 }')
    with pytest.raises(ValueError, match="missing.config: no such file"):
        model_specs([], str(tmp_path / "missing.config"))
    config.write_text("model_config_list { nonsense")
    with pytest.raises(ValueError, match="not TF Serving's model config"):
        model_specs([], str(config))


def test_what_is_not_a_model_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="no such folder"):
        model_specs([str(tmp_path / "missing")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="is not a model: no saved_model.pb, no numbered version folders, no "
                                         "model.keras"):
        model_specs([str(tmp_path / "empty")])
    with pytest.raises(ValueError, match="Nothing to serve"):
        model_specs([])
    _versions(tmp_path / "a", 1)
    with pytest.raises(ValueError, match="The model name x is given twice"):
        model_specs([f"x={tmp_path / 'a'}", f"x={tmp_path / 'a' / '1'}"])


def test_serve_help_gives_every_flag_its_default(capsys, monkeypatch):
    from keras_bert_lib.cli import main

    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    flags = capsys.readouterr().out.split("\n  --")[1:]
    assert len(flags) == 18 and all("(default" in f for f in flags), flags


def test_a_port_in_use_is_named_before_any_model_loads(tmp_path):
    import socket

    from keras_bert_lib.serve import serve

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ValueError, match=f"Cannot listen on 127.0.0.1:{port} .*pick another port with --port"):
            serve([], port=port)


def test_a_saved_model_asked_for_openvino_is_refused_in_one_line(tmp_path):
    from keras_bert_lib.serve.server import check_saved_model_dtype

    with pytest.raises(ValueError, match="is a SavedModel, which runs on TensorFlow: serve the fine-tuning run's "
                                         "folder to run on OpenVINO, or leave --runtime at auto"):
        check_saved_model_dtype(str(tmp_path), "auto", "openvino")
