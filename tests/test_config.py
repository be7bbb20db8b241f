"""Config validation without Hydra (the package is usable from plain Python)."""

import copy
from dataclasses import MISSING, FrozenInstanceError, fields
from pathlib import Path

import pytest
import yaml

from sgmcmc.config import RUN_FIELDS, ConfigError, Key, RunDescription, RunOptions
from sgmcmc.keys import BEGIN, END, GROUPS, describe_config, key_list, resume_free_keys, validate_config
from sgmcmc.experiment import build
from sgmcmc.samplers import SAMPLERS

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
    del config["sampler"]["step_size"]
    with pytest.raises(ConfigError, match="sampler.step_size is missing"):
        validate_config(config)
    with pytest.raises(ConfigError, match="sampler.metric is not a known key"):
        validate_config(with_change(("sampler", "metric"), None))


def test_metric_of_wrong_length_is_rejected():
    config = with_change(("sampler",), {"name": "sgrhmc", "step_size": 0.1, "metric": {"name": "rational", "scale": [1, 1, 1], "softening": [1, 1, 1]}})
    with pytest.raises(ConfigError, match="metric.scale must have 1 or 1 entries"):
        build(config)


def test_noise_estimation_keys_are_validated():
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


# --- one declaration per key: the config files, the run keys and the README follow it --------------------------

ROOT = Path(__file__).resolve().parents[1]


def sampler_file_problems(config_dir: Path) -> list[str]:
    """What is wrong with ``<config_dir>/sampler/*.yaml`` (nothing: []): each file's ``name`` is a registered sampler and
    its stem is that name, or the name and a suffix (``ccadl_shang2015.yaml``: ``ccadl``) where the name is the longest
    registered one the stem starts with (``sghmc_mh.yaml`` is sghmc_mh, not an SGHMC variant); every registered sampler
    has its own ``<name>.yaml``; every key a file sets is one its sampler declares."""
    problems = []
    for path in sorted((config_dir / "sampler").glob("*.yaml")):
        node = yaml.safe_load(path.read_text()) or {}
        name = node.get("name")
        prefixes = [registered for registered in SAMPLERS if path.stem == registered or path.stem.startswith(registered + "_")]
        expected = max(prefixes, key=len) if prefixes else None
        if name not in SAMPLERS:
            problems.append(f"{path.name}: name {name!r} is not a registered sampler")
        elif name != expected:
            problems.append(f"{path.name}: name {name!r}, but the file name says {expected!r} (<name>.yaml or <name>_<suffix>.yaml)")
        else:
            undeclared = sorted(set(node) - {"name", "defaults"} - set(SAMPLERS[name].config_keys()))
            if undeclared:
                problems.append(f"{path.name}: keys {undeclared} are not declared by {SAMPLERS[name].__name__}")
    problems += [f"no sampler/{name}.yaml for the registered sampler {name!r}" for name in SAMPLERS
                 if not (config_dir / "sampler" / f"{name}.yaml").is_file()]
    return problems


def test_every_sampler_config_file_names_its_registered_sampler():
    assert sampler_file_problems(ROOT / "configs") == []


def test_a_variant_file_naming_another_sampler_is_caught(tmp_path):
    (tmp_path / "sampler").mkdir()
    for name in SAMPLERS:
        (tmp_path / "sampler" / f"{name}.yaml").write_text(f"name: {name}\n")
    (tmp_path / "sampler" / "ccadl_shang2015.yaml").write_text("name: sghmc\n")
    (tmp_path / "sampler" / "sghmc_mh.yaml").write_text("name: sghmc\n")
    (tmp_path / "sampler" / "sgld.yaml").write_text("name: sgld\nfriction: 1.0\n")
    assert sampler_file_problems(tmp_path) == [
        "ccadl_shang2015.yaml: name 'sghmc', but the file name says 'ccadl' (<name>.yaml or <name>_<suffix>.yaml)",
        "sghmc_mh.yaml: name 'sghmc', but the file name says 'sghmc_mh' (<name>.yaml or <name>_<suffix>.yaml)",
        "sgld.yaml: keys ['friction'] are not declared by SGLD"]


def test_the_run_options_defaults_are_config_yamls():
    """A Python caller's RunOptions and a run from configs/config.yaml start from the same values (the yaml is read
    here, not through the code under test)."""
    run = yaml.safe_load((ROOT / "configs" / "config.yaml").read_text())["run"]
    defaults = {option.name: option.default for option in fields(RunOptions)}
    assert set(run) == set(defaults)
    assert {name: value for name, value in run.items()} == defaults
    assert RunOptions(n_steps=10, burn_in=4, thin=3).n_kept == 2


def test_resume_free_keys_come_from_the_declarations():
    assert resume_free_keys() == {"run.resume", "run.checkpoint_every_s", "run.checkpoint_every_steps", "run.progress",
                                  "run.results_dir", "run.block_seconds", "cache_dir", "target.cache_dir"}


def test_every_registered_group_member_declares_its_keys_with_a_meaning():
    for group, registry in GROUPS.items():
        for name in registry:
            for key, declared in registry[name].items():
                assert isinstance(declared, Key) and declared.meaning and declared.allowed, (group, name, key)


def test_the_readme_key_list_is_generated_from_the_declarations():
    text = (ROOT / "README.md").read_text()
    generated = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()
    assert generated == key_list().strip(), "regenerate it: .venv/bin/python -m sgmcmc.keys --readme README.md"


def test_a_config_is_validated_once_into_a_frozen_typed_description():
    description = describe_config(BASE)
    assert isinstance(description, RunDescription) and isinstance(description.run, RunOptions)
    assert description.seed == 0 and description.run.n_steps == 100 and description.run.progress is False
    assert description.run.figures is True and description.run.checkpoint_every_s == 300.0  # RunOptions' defaults
    assert description.sampler.name == "sghmc" and description.step_size == 0.1
    assert description.sampler.arguments() == {k: v for k, v in BASE["sampler"].items() if k != "name"}
    assert description.gradient.name == "minibatch"  # the optional group's default section
    with pytest.raises(FrozenInstanceError):
        description.seed = 1
    with pytest.raises(FrozenInstanceError):
        description.run.n_steps = 1
    with pytest.raises(TypeError):
        description.sampler.values["friction"] = 2.0
    assert description.as_dict() == validate_config(BASE)  # config.yaml and the checkpoints' hash read it
    built = build(description)
    assert built.sampler.name == "sghmc" and built.settings.n_steps == 100
    with pytest.raises(ConfigError, match="run.n_steps=0 is invalid"):
        describe_config(with_change(("run", "n_steps"), 0))


def test_the_run_keys_are_declared_once_by_run_options():
    declared = {option.name: option for option in fields(RunOptions)}
    assert list(RUN_FIELDS) == list(declared)
    for name, key in RUN_FIELDS.items():
        assert key is declared[name].metadata["key"]
        assert key.required == (declared[name].default is MISSING)
