"""Target registry: ``make_target(name, **params)`` builds a target by its config name.

The registry holds names, where each target lives (``"module:attribute"``) and its config keys (``target.<key>``,
:class:`sgmcmc.schema.Key`), declared together in one line per target: a target's module, with what it imports
(scipy.stats, the data layer, scikit-learn, the LDA machinery and numba), is imported when the target is first built
or looked up, not with this package, while :mod:`sgmcmc.config` validates its keys without importing it.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from importlib import import_module

from sgmcmc import lazy_exports
from sgmcmc.schema import Key, choice, integer, mapping, noise_variance, number_list, optional, real, string
from sgmcmc.targets.base import SyntheticTarget, Target
from sgmcmc.targets.data import DataTarget


def lda(**params):
    """Online LDA (SPEC T10), imported on use: its Gibbs kernels load numba."""
    from sgmcmc.targets.lda import lda as make_lda

    return make_lda(**params)


CORRELATION_MATRIX = [[1.0, 0.9], [0.9, 1.0]]


def _gaussian_2d(name: str, **form):
    def make(**kw):
        from sgmcmc.targets.gaussian_2d import Gaussian2D

        return Gaussian2D(**form, name=name, **kw)

    return make


class _Registry(MutableMapping):
    """Name -> the target's class or factory (a dict to its users); an entry given as ``"module:attribute"`` is
    imported when it is looked up. Built from ``{name: (entry, config keys)}``; :meth:`config_keys` gives a target's
    keys."""

    def __init__(self, entries: dict[str, tuple]):
        self._entries = {name: entry for name, (entry, _) in entries.items()}
        self._keys = {name: dict(keys) for name, (_, keys) in entries.items()}

    def config_keys(self, name: str) -> dict[str, Key]:
        """The keys a config's ``target`` section may set for target ``name`` (besides ``name``)."""
        return self._keys[name]

    def register(self, name: str, entry, keys: dict[str, Key]) -> None:
        """Add (or replace) target ``name``: its class or factory (or ``"module:attribute"``) and its config keys."""
        self._entries[name], self._keys[name] = entry, dict(keys)

    def __getitem__(self, name):
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attribute = entry.partition(":")
            entry = self._entries[name] = getattr(import_module(module), attribute)
        return entry

    def __setitem__(self, name, entry):  # keeps the keys a target of that name had (none for a new one)
        self.register(name, entry, self._keys.get(name, {}))

    def __delitem__(self, name):
        del self._entries[name], self._keys[name]

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)

    def __contains__(self, name):
        return name in self._entries

    def __repr__(self):
        return f"TARGETS({', '.join(self._entries)})"


# Config keys shared by the targets (SPEC §2; defaults in configs/target/<name>.yaml)
INITIAL_POSITION = Key(optional(number_list()), "θ₀ (one entry per coordinate); null: zeros")
INITIAL_SPREAD = Key(real(0.0), "θ₀ = initial_position + initial_spread·N(0, I)")
SYNTHETIC = {"noise_variance": Key(noise_variance, "V in ∇Ũ = ∇U + N(0, V)"),
             "initial_position": INITIAL_POSITION, "initial_spread": INITIAL_SPREAD}
DATA_DIR = Key(optional(string), "the data folder; null: the top-level data_dir's default (SPEC §4.9)")
BATCH_SIZE = Key(integer(1), "n, the minibatch size")
PRIOR_VARIANCE = Key(real(0.0, strict=True), "variance of the N(0, σ²I) prior on the weights")
INITIAL_SCALE = Key(real(0.0, strict=True), "standard deviation of θ₀ ~ N(0, s²I)")
HYPER_SHAPE = Key(real(0.0, strict=True), "shape a of the Gamma(a, b) hyperprior of every precision")
HYPER_RATE = Key(real(0.0, strict=True), "rate b of the Gamma(a, b) hyperprior of every precision")
PREDICT_EVERY = Key(optional(integer(0)), "steps between test-set predictions (averaged after burn-in); null: one "
                                          "pass over the training data; 0: never")

TARGETS = _Registry({
    "gaussian_1d": ("sgmcmc.targets.gaussian_1d:Gaussian1D",
                    {**SYNTHETIC, "mean": Key(real(), "µ"), "std": Key(real(0.0, strict=True), "σ")}),
    "double_well": ("sgmcmc.targets.double_well:DoubleWell", SYNTHETIC),
    "lecture_quartic": ("sgmcmc.targets.lecture_quartic:LectureQuartic", SYNTHETIC),
    "correlated_2d": ("sgmcmc.targets.correlated_2d:Correlated2D", SYNTHETIC),
    "gaussian_2d_cov": (_gaussian_2d("gaussian_2d_cov", covariance=CORRELATION_MATRIX), SYNTHETIC),
    "gaussian_2d_prec": (_gaussian_2d("gaussian_2d_prec", precision=CORRELATION_MATRIX), SYNTHETIC),
    "gaussian_mixture_25": ("sgmcmc.targets.gaussian_mixture_25:GaussianMixture25",
                            {"noise_variance": Key(noise_variance, "V in ∇Ũ = ∇U + N(0, V)"),
                             "start": Key(choice("modes", "uniform"), "θ₀: chain i at mode i mod 25, or uniform on "
                                                                      "[−a, a]² (the authors')"),
                             "initial_range": Key(real(0.0, strict=True), "a of the uniform start")}),
    "welling_teh_mixture": ("sgmcmc.targets.welling_teh_mixture:WellingTehMixture",
                            {"data_seed": Key(integer(0), "seed of the drawn data"), "n_data": Key(integer(1), "N"),
                             "batch_size": BATCH_SIZE, "initial_position": INITIAL_POSITION,
                             "initial_spread": INITIAL_SPREAD}),
    "normal_gamma": ("sgmcmc.targets.normal_gamma:NormalGamma",
                     {"data_seed": Key(optional(integer(0)), "seed of the drawn data; null: the run's seed (SPEC §2 T7)"),
                      "n_data": Key(integer(2), "N"), "batch_size": BATCH_SIZE,
                      "initial_position": Key(number_list(), "θ₀ = (µ, γ) of every chain")}),
    "logistic_mnist79": ("sgmcmc.targets.logistic_regression:logistic_mnist79",
                         {"data_dir": DATA_DIR,
                          "cache_dir": Key(optional(string), "the projected features' cache folder; null: the top-level "
                                           "cache_dir's default (SPEC §2 T8)", resume_free=True),
                          "projection_seed": Key(integer(0), "seed of the random projection"),
                          "n_components": Key(integer(1), "dimension of the random projection"),
                          "batch_size": BATCH_SIZE, "prior_variance": PRIOR_VARIANCE, "initial_scale": INITIAL_SCALE}),
    "logistic_synthetic": ("sgmcmc.targets.logistic_regression:logistic_synthetic",
                           {"n_data": Key(integer(2), "N, training points drawn from the known logistic model"),
                            "dim": Key(integer(1), "d, features x ~ N(0, I_d)"),
                            "data_seed": Key(integer(0), "seed of the drawn training and test points"),
                            "weights": Key(optional(number_list()), "w* of the model; null: (1, −1/2, 1/4, …)"),
                            "n_test": Key(integer(1), "test points drawn alike"),
                            "batch_size": BATCH_SIZE, "prior_variance": PRIOR_VARIANCE, "initial_scale": INITIAL_SCALE}),
    "drbm": ("sgmcmc.targets.drbm:drbm",
             {"dataset": Key(choice("connect4", "letter", "acoustic"), "the LIBSVM data set (SPEC §2 T9)"),
              "data_dir": DATA_DIR,
              "n_hidden": Key(optional(integer(1)), "hidden units; null: the paper's per data set (SPEC §4.10)"),
              "batch_size": Key(optional(integer(1)), "n; null: the paper's per data set (SPEC §4.10)"),
              "split_seed": Key(integer(0), "seed of the train/test split"), "prior_variance": PRIOR_VARIANCE,
              "initial_scale": INITIAL_SCALE}),
    "bnn_mnist": ("sgmcmc.targets.bnn:bnn_mnist",
                  {"data_dir": DATA_DIR,
                   "n_hidden": Key(integer(1), "H, the hidden units (SPEC §2 T11)"),
                   "batch_size": BATCH_SIZE,
                   "split_seed": Key(integer(0), "seed of the train/validation shuffle of the 60,000 training images"),
                   "n_validation": Key(integer(0), "training images held out as the validation split (scored only "
                                                   "with evaluate_on=validation)"),
                   "initial_scale": INITIAL_SCALE, "hyper_shape": HYPER_SHAPE, "hyper_rate": HYPER_RATE,
                   "gibbs_every": Key(optional(integer(0)), "steps between Gibbs updates of the precisions; null: one "
                                                            "epoch; 0: never"),
                   "predict_every": PREDICT_EVERY,
                   "max_train": Key(optional(integer(2)), "keep only the first max_train training images; null: all"),
                   "max_test": Key(optional(integer(1)), "keep only the first max_test test images; null: all"),
                   "minibatch_order": Key(choice("random", "sweep"), "random: n rows drawn each step; sweep: the "
                                          "training set (shuffled by split_seed) swept in order, ⌊N/n⌋ fixed "
                                          "minibatches an epoch, as the authors' code (the engine's blocks)"),
                   "evaluate_on": Key(choice("test", "validation"), "the images the predictive is scored on: the test "
                                      "set, or the validation split (a step size chosen on it never sees the test "
                                      "set; max_test then keeps its first max_test)")}),
    "bpmf_movielens": ("sgmcmc.targets.bpmf:bpmf_movielens",
                       {"data_dir": DATA_DIR,
                        "ratings_file": Key(optional(string), "a file in MovieLens-1M's ratings.dat format to read "
                                            "instead (e.g. a synthetic one); null: <data_dir>/movielens/ml-1m/ratings.dat "
                                            "(SPEC §2 T12)"),
                        "fold": Key(integer(1), "the test fold, 1..n_folds (the authors' mknfold.py, random.seed(0))"),
                        "n_folds": Key(integer(2), "the number of folds (5: 80/20)"),
                        "latent_dim": Key(integer(1), "k, the latent dimension of U and V"),
                        "batch_size": BATCH_SIZE,
                        "base": Key(real(), "the global offset of the prediction on the (r − 1)/4 scale"),
                        "initial_scale": Key(real(0.0, strict=True), "standard deviation of the initial U, V entries "
                                             "(biases start at 0)"),
                        "hyper_shape": HYPER_SHAPE, "hyper_rate": HYPER_RATE,
                        "gibbs_every": Key(integer(0), "steps between Gibbs updates of the precisions (the authors' "
                                                       "nstep); 0: never"),
                        "predict_every": PREDICT_EVERY,
                        "evaluate_on": Key(choice("test", "validation"), "the ratings the predictions are scored on: "
                                           "the test fold, or a validation set split from the training ratings by the "
                                           "same rule (their fold `fold`; the test fold then left out)")}),
    "lda": (lda,
            {"data_dir": DATA_DIR,
             "source": Key(optional(string), "the document stream; null: the data folder's Wikipedia sample "
                                             "(SPEC §2 T10, §4.11)"),
             "vocabulary": Key(optional(string), "the vocabulary file; null: dictnostops.txt"),
             "source_format": Key(choice("auto", "wikiextractor", "xml", "lines"), "how to read source"),
             "n_topics": Key(integer(1), "K"), "alpha": Key(real(0.0, strict=True), "α, the document–topic prior"),
             "beta": Key(real(0.0, strict=True), "β, the topic–word prior"),
             "batch_size": Key(integer(1), "|D_t|, documents per minibatch"),
             "n_sweeps": Key(integer(2), "Gibbs sweeps per document (the last half averaged)"),
             "corpus_size": Key(real(0.0, strict=True), "D, the corpus size the gradient is scaled to"),
             "n_held_out": Key(integer(1), "first documents of the shuffled stream, held out for the perplexity"),
             "buffer_size": Key(integer(1), "documents in the bounded shuffle buffer"),
             "stream_seed": Key(integer(0), "seed of the stream's shuffle")}),
    # your own model (sgmcmc/targets/user.py: the contract and its checks; docs/user-guide.md)
    "custom": ("sgmcmc.targets.user:make_user_target",
               {"model": Key(string, "your model's class: path/to/file.py:ClassName (relative to the working folder) "
                                     "or package.module.ClassName (as Hydra's _target_)", required=True),
                "options": Key(mapping, "keyword arguments of the model's class (+target.options.<name>=<value>)"),
                "batch_size": Key(optional(integer(1)), "n of a data model (one with n_data); null: min(32, N)"),
                "noise_variance": Key(real(0.0), "v of a density model: ∇Ũ = ∇U + N(0, v·I) (0: the exact gradient)")}),
})

# the classes this package exported, imported on first use (``from sgmcmc.targets import Correlated2D``)
_LAZY = {
    "Correlated2D": "sgmcmc.targets.correlated_2d",
    "DoubleWell": "sgmcmc.targets.double_well",
    "Gaussian1D": "sgmcmc.targets.gaussian_1d",
    "Gaussian2D": "sgmcmc.targets.gaussian_2d",
    "LectureQuartic": "sgmcmc.targets.lecture_quartic",
    "BayesianNeuralNetwork": "sgmcmc.targets.bnn",
    "bnn_mnist": "sgmcmc.targets.bnn",
    "BPMF": "sgmcmc.targets.bpmf",
    "bpmf_movielens": "sgmcmc.targets.bpmf",
    "DiscriminativeRBM": "sgmcmc.targets.drbm",
    "drbm": "sgmcmc.targets.drbm",
    "LogisticRegression": "sgmcmc.targets.logistic_regression",
    "logistic_mnist79": "sgmcmc.targets.logistic_regression",
    "logistic_synthetic": "sgmcmc.targets.logistic_regression",
    "NormalGamma": "sgmcmc.targets.normal_gamma",
    "WellingTehMixture": "sgmcmc.targets.welling_teh_mixture",
    "GaussianMixture25": "sgmcmc.targets.gaussian_mixture_25",
}


__getattr__ = lazy_exports(globals(), _LAZY)


def make_target(name: str, **params) -> Target:
    """Build the target registered under ``name`` with its config parameters."""
    if name not in TARGETS:
        raise KeyError(f"unknown target {name!r}; allowed: {', '.join(sorted(TARGETS))}")
    return TARGETS[name](**params)


__all__ = ["Target", "SyntheticTarget", "DataTarget", "LogisticRegression", "DiscriminativeRBM", "TARGETS", "make_target"]
