"""sgmcmc.results.code_is_dirty: a tracked change outside results/ makes the code dirty; outputs written under
results/ (a changed LATEST) do not; outside a repository the answer is None (checked in a throwaway repository)."""

import subprocess

from sgmcmc.results import code_is_dirty


def _git(folder, *args):
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)


def test_only_changes_outside_results_make_the_code_dirty(tmp_path):
    repository = tmp_path / "repository"
    (repository / "results" / "paper").mkdir(parents=True)
    (repository / "code.py").write_text("x = 1\n")
    (repository / "results" / "paper" / "LATEST").write_text("old\n")
    _git(repository, "init", "-q")
    _git(repository, "add", ".")
    _git(repository, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
    assert code_is_dirty(repository) is False
    (repository / "results" / "paper" / "LATEST").write_text("new\n")
    (repository / "results" / "paper" / "new_folder").mkdir()
    assert code_is_dirty(repository) is False
    (repository / "code.py").write_text("x = 2\n")
    assert code_is_dirty(repository) is True
    (tmp_path / "elsewhere").mkdir()
    assert code_is_dirty(tmp_path / "elsewhere") is None
