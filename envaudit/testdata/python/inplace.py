# In-place forms of os.environ load it before they store it: PyPTO's lint
# treats them as reads (issue 18).
import os
from os import environ

os.environ |= {"A": "1"}  # want "dynamic read in <module>"
environ |= {"B": "2"}  # want "dynamic read in <module>"
(os.environ) |= {}  # want "dynamic read in <module>"
os.environ["PATH"] += ":/opt/bin"  # want "PATH"
environ["LD_LIBRARY_PATH"] += ":/opt/lib"  # want "LD_LIBRARY_PATH"
os.environ.update({"C": "3"})  # want "dynamic read in <module>"
os.environ["PLAIN_WRITE"] = "1"
del os.environ["PLAIN_DELETE"]


def merge(extra):
    os.environ |= extra  # want "dynamic read in merge"
    os.environ.clear()  # want "dynamic read in merge"
