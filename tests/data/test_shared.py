"""Where the shared data is found (kbert.data.shared): KBERT_SHARED_DATA first, a folder only when it
holds the data's README.md."""

from kbert.data import shared


def test_the_folder_kbert_shared_data_names_comes_first_when_it_holds_a_readme(tmp_path, monkeypatch):
    monkeypatch.setenv("KBERT_SHARED_DATA", str(tmp_path))
    assert shared.candidates()[0] == tmp_path
    assert shared.shared_data_dir() != tmp_path  # no README.md yet
    (tmp_path / "README.md").write_text("data\n")
    assert shared.shared_data_dir() == tmp_path


def test_without_the_variable_the_folders_beside_and_inside_the_repository(tmp_path, monkeypatch):
    monkeypatch.delenv("KBERT_SHARED_DATA", raising=False)
    repo = shared.REPO
    assert (repo / "kbert" / "data" / "shared.py").exists()
    assert shared.candidates() == [repo.parent / "shared" / "data", repo / "shared" / "data"]
    monkeypatch.setattr(shared, "candidates", lambda: [tmp_path / "none", tmp_path])
    assert shared.shared_data_dir() is None
