"""The wheel must carry every sub-package and the data the default model is built from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the test extra installs tomli
    import tomli as tomllib

ROOT = Path(__file__).parent.parent


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_folder_is_installed():
    conf = _setuptools()
    listed = set(conf["packages"])
    found = set()
    for package, folder in conf["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *rel.parts]))
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_generic_folders_install_under_the_share_ner_namespace():
    for package in _setuptools()["packages"]:
        assert package == "share_ner" or package.startswith("share_ner.")


def test_package_data_covers_the_default_corpus_and_abbreviations():
    data = _setuptools()["package-data"]
    assert "data/**/*" in data["share_ner"]
    assert "data/**/*" in data["share_ner.lexicons"]
    assert any((ROOT / "share_ner" / "data" / "default_corpus").rglob("*.pipe.txt"))
    assert (ROOT / "lexicons" / "data" / "clinical_abbreviations.tsv").is_file()


def test_benchmarks_stay_outside_the_package_and_the_tests():
    assert "benchmarks" not in {folder.split("/")[0] for folder in _setuptools()["package-dir"].values()}
    assert not list((ROOT / "eval").glob("bench_*.py")), "benchmark scripts live in benchmarks/"
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py")}
    for test in (ROOT / "tests").rglob("*.py"):
        text = test.read_text(encoding="utf-8")
        assert not any(f"import {s}" in text or f"from {s} import" in text for s in scripts), test.name


def test_the_version_is_written_once():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert _setuptools()["dynamic"]["version"] == {"attr": "share_ner.__version__"}


def test_the_evidence_page_results_are_the_results_files():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fill_readme.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_tests_run_with_a_private_cache():
    import os

    from share_ner.lexicons import cache_dir

    cache = Path(os.environ["SHARE_NER_CACHE"])
    assert cache_dir() == cache and not cache.is_relative_to(Path.home() / ".cache")


def test_a_source_checkout_finds_its_top_level_packages():
    # Python started in the repository imports share_ner/ from it, not the installed package (no site: no
    # editable finder either); share_ner.features, .lexicons and .eval are still found, at the top level.
    code = ("import importlib.util, sys; sys.path.insert(0, sys.argv[1]); "
            "print(*(importlib.util.find_spec('share_ner.' + n).origin for n in ('features', 'lexicons', 'eval')))")
    out = subprocess.run([sys.executable, "-S", "-c", code, str(ROOT)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(ROOT / n / "__init__.py") for n in ("features", "lexicons", "eval")]
