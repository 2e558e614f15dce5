"""Experiment configs: TOML files, validated in full before anything runs.

Every mistake becomes one line that names the file and the dotted key, shows the value,
states the rule and suggests a fix. Paths in a config are relative to the config file.
The sections are in `gi.config.sections`, the whole config (`Config`: arms, seeds, runs) in
`gi.config.experiment`, reading and checking a file in `gi.config.loading`.
"""

from __future__ import annotations

from gi.config.experiment import Config
from gi.config.loading import load_config, parse_config

__all__ = ["Config", "load_config", "parse_config"]
