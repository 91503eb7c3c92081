"""Every public ComputationBuilder method is exercised by some test in this
folder: a new builder method without a test fails here. A method counts as
exercised when a test file calls it (`.Name(`) or names it in a table of
methods called through getattr (`"Name"`)."""

import glob
import os
import re

import jitd
from conftest import HERE


def _public_methods():
    return sorted(name for name in dir(jitd.ComputationBuilder)
                  if name[0].isupper() and callable(getattr(jitd.ComputationBuilder, name)))


def test_every_builder_method_has_a_test():
    sources = ""
    for path in glob.glob(os.path.join(HERE, "test_*.py")):
        if os.path.basename(path) != os.path.basename(__file__):
            with open(path) as f:
                sources += f.read()
    missing = [name for name in _public_methods()
               if not re.search(r'\.%s\(|"%s"' % (name, name), sources)]
    assert not missing, "builder methods no test exercises: %s" % ", ".join(missing)


def test_the_method_list_is_not_empty():
    # Guards the test above against passing vacuously.
    methods = _public_methods()
    assert len(methods) > 100 and "Add" in methods and "SelectAndScatter" in methods
