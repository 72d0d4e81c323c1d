"""from os import * binds the environment functions too."""

from os import *

getenv("PY_STAR_GETENV")  # want "PY_STAR_GETENV"
environ["PY_STAR_ENVIRON"]  # want "PY_STAR_ENVIRON"
environb.get(b"PY_STAR_ENVIRONB")  # want "PY_STAR_ENVIRONB"
