"""Config validation without Hydra (the package is usable from plain Python)."""

import copy

import pytest

from sgmcmc.config import ConfigError, validate_config
from sgmcmc.experiment import build

BASE = {
    "sampler": {"name": "sghmc", "step_size": 0.1, "friction": 1.0, "noise_estimate": "known", "integrator": "splitting"},
    "target": {"name": "double_well", "noise_variance": 4.0, "initial_position": None, "initial_spread": 1.0},
    "schedule": {"name": "constant"},
    "run": {"n_steps": 100, "n_chains": 10, "burn_in": 10, "thin": 1, "eval_every": 10, "progress": False},
    "seed": 0,
}


def with_change(path, value):
    config = copy.deepcopy(BASE)
    section = config
    for key in path[:-1]:
        section = section[key]
    section[path[-1]] = value
    return config


def test_valid_config_builds():
    built = build(BASE)
    assert built.sampler.name == "sghmc" and built.target.name == "double_well" and built.settings.n_steps == 100


@pytest.mark.parametrize(
    "path, value, message",
    [
        (("sampler", "name"), "nope", "sampler='nope' is invalid: allowed values are"),
        (("sampler", "step_size"), -0.1, "sampler.step_size=-0.1 is invalid"),
        (("sampler", "step_size"), "big", "sampler.step_size='big' is invalid: expected a number"),
        (("sampler", "friction"), 0, "sampler.friction=0.0 is invalid"),
        (("run", "n_steps"), True, "run.n_steps=True is invalid: expected an integer"),
        (("run", "thin"), 0, "run.thin=0 is invalid"),
        (("schedule", "name"), "linear", "schedule='linear' is invalid: allowed values are constant, cyclical, polynomial"),
        (("target", "initial_position"), [0.0, 1.0], "initial_position must have 1 entries"),
        (("seed",), 1.5, "seed=1.5 is invalid: expected an integer"),
    ],
)
def test_bad_values_name_the_key_and_the_allowed_values(path, value, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        build(with_change(path, value))


def test_missing_and_unknown_keys():
    config = copy.deepcopy(BASE)
    del config["run"]["n_chains"]
    with pytest.raises(ConfigError, match="run.n_chains is missing"):
        validate_config(config)
    with pytest.raises(ConfigError, match="sampler.metric is not a known key"):
        validate_config(with_change(("sampler", "metric"), None))


def test_metric_of_wrong_length_is_rejected():
    config = with_change(("sampler",), {"name": "sgrhmc", "step_size": 0.1, "metric": {"name": "rational", "scale": [1, 1, 1], "softening": [1, 1, 1]}})
    with pytest.raises(ConfigError, match="metric.scale must have 1 or 1 entries"):
        build(config)


def test_noise_estimation_keys_are_validated():
    from sgmcmc.config import ConfigError, validate_config
    import pytest as _pytest

    base = {"sampler": {"name": "ccadl", "step_size": 0.01}, "target": {"name": "normal_gamma"},
            "schedule": {"name": "constant"}, "seed": 0,
            "run": {"n_steps": 10, "n_chains": 1, "burn_in": 0, "thin": 1, "eval_every": 5, "progress": False}}
    assert validate_config(base)["sampler"]["name"] == "ccadl"
    for key, value, message in (("running_form", "sparse", "allowed values are full, diagonal"),
                                ("noise_estimate", "guess", "allowed values are known, zero, running"),
                                ("noise_clip", "yes", "allowed values are true, false")):
        bad = {**base, "sampler": {**base["sampler"], key: value}}
        with _pytest.raises(ConfigError, match=message):
            validate_config(bad)
    with _pytest.raises(ConfigError, match="vars is invalid"):
        validate_config({**base, "vars": [1, 2]})
