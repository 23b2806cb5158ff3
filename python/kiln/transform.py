"""kiln.transform: PassContext, the settings of the pass pipeline (TVM's tvm.transform.PassContext).

    with kiln.transform.PassContext(opt_level=3, disabled_pass=["FoldScaleAxis"],
                                    config={"relay.FuseOps.max_depth": 8}):
        lib = kiln.build(mod, target="cpu")

kiln.build uses the innermost PassContext entered in the calling thread (PassContext() if none).
Pass names and config keys are checked when the context is made (KilnError lists the known ones).
"""
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _ffi

__all__ = ["PassContext", "pass_names"]

_local = threading.local()


def _stack() -> List["PassContext"]:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def _names(names: Union[None, str, Sequence[str]]) -> List[str]:
    if names is None:
        return []
    return [names] if isinstance(names, str) else [str(n) for n in names]


class PassContext:
    """Which passes run and how: opt_level (0-3; each pass has the lowest level it runs at),
    required_pass (run whatever the level), disabled_pass (never run), config (typed keys, see
    list_configs()). A context manager; contexts nest."""

    def __init__(self, opt_level: int = 3, required_pass: Optional[Sequence[str]] = None,
                 disabled_pass: Optional[Sequence[str]] = None,
                 config: Optional[Mapping[str, Any]] = None) -> None:
        self.opt_level = int(opt_level)
        self.required_pass = _names(required_pass)
        self.disabled_pass = _names(disabled_pass)
        self.config = dict(config or {})
        self._context = _ffi.PassContext(self.opt_level, set(self.required_pass), set(self.disabled_pass),
                                         self.config)

    def __enter__(self) -> "PassContext":
        _stack().append(self)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        stack = _stack()
        if not stack or stack[-1] is not self:
            raise RuntimeError("PassContext contexts must be exited in the reverse order of entering them")
        stack.pop()

    def __repr__(self) -> str:
        return (f"PassContext(opt_level={self.opt_level}, required_pass={self.required_pass}, "
                f"disabled_pass={self.disabled_pass}, config={self.config})")

    @staticmethod
    def current() -> "PassContext":
        """The innermost context entered in this thread, or a default PassContext()."""
        stack = _stack()
        return stack[-1] if stack else PassContext()

    @staticmethod
    def list_configs() -> Dict[str, Dict[str, str]]:
        """Every config key: {name: {"type": "int" | "bool" | "str", "default": ..., "description": ...}}."""
        return {name: {"type": kind, "default": default, "description": doc}
                for name, kind, default, doc in _ffi.config_keys()}


def pass_names() -> List[str]:
    """The passes of the pipeline, in order."""
    return list(_ffi.pass_names())
