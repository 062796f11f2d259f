"""Configuration: the schema, its validation, and how config files are read.

* :mod:`~ibrobust.config.schema` - :func:`load_schema`: the central schema with every kind's
  fragment filled in;
* :mod:`~ibrobust.config.validate` - :func:`validate_config`: defaults, the schema's errors
  as ``config key <path>: ...``, the entries' value checks and the cross-references;
* :mod:`~ibrobust.config.values` - what a JSON schema lets through: NaN / inf anywhere,
  floats where integers are meant; :func:`~ibrobust.config.values.key_path`;
* :mod:`~ibrobust.config.command_line` - ``--config key=value`` strings parsed to the
  schema's types;
* :mod:`~ibrobust.config.overlay` - config files read strictly (syntax errors, keys written
  twice); standalone, the workflow profile loads it by its path;
* :mod:`~ibrobust.config.docs` - ``python -m ibrobust.config.docs > docs/config.md``.

The top layer of the library: it reaches the kinds only through the registries of
:mod:`ibrobust.kinds` and imports no other package of it. Errors are
:class:`ibrobust.errors.ConfigError`. The expanded config a study plan runs (sweep
variants, scale-ladder rungs) is :mod:`ibrobust.studies.expansion`'s.
"""

from ibrobust.config.schema import load_schema
from ibrobust.config.validate import validate_config
from ibrobust.errors import ConfigError

__all__ = ["ConfigError", "load_schema", "validate_config"]
