"""The one Jinja2 environment every target renders through. Python decides what goes into the output; templates
only render it (StrictUndefined: a missing variable is a bug, not an empty string)."""
from __future__ import annotations

_env = None


def environment():
    global _env
    if _env is None:
        import jinja2

        from porter.resources import data_dir
        _env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
                                  undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                                  trim_blocks=True, lstrip_blocks=True, autoescape=False)
    return _env


def render(name: str, **context) -> str:
    """Render templates/<name> (e.g. "hip/prologue.hip.j2") with `context`."""
    return environment().get_template(name).render(**context)
