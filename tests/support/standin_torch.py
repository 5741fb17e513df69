# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``__init__.py`` of a stand-in torch wheel (standin_index.wheel(..., init=INIT)), for tests of a stack whose
real torch cannot be had here (the CPU builds live on PyTorch's own index).

Just enough for a library that imports torch while it is imported (accelerate 0.15 reads ``torch.nn``,
``torch.utils.data``, ``torch.cuda.amp``, ``torch.distributed`` ... at import time): every ``torch.*`` module is made
on demand, and every attribute of it is a placeholder class that can be subclassed, called (as a decorator it returns
the function), iterated (empty) and is false (``torch.cuda.is_available()`` says no). There is no tensor code: any
library code that computes with torch fails, which no test that uses it may hide.
"""

INIT = '''"""Stand-in torch made by the amx.cluster tests: placeholders only, no tensor code."""

import importlib.abc
import importlib.machinery
import sys
import types

__version__ = "1.13.0+cpu"


class _Placeholder(type):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Placeholder(name, (), {})

    def __call__(cls, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return _Placeholder(cls.__name__, (), {})

    def __bool__(cls):
        return False

    def __iter__(cls):
        return iter(())


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Placeholder(name, (), {})


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.startswith("torch."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Module(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.append(_Finder())
sys.modules[__name__].__class__ = _Module
'''
