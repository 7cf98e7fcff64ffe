"""Prints where `cmake --install` puts the package for this interpreter, relative to the install
prefix (argv[1], the one configured), so `cmake --install --prefix P` puts it under P: the
platlib of this interpreter's scheme at that prefix. Debian's default scheme (posix_local)
already adds /local, so /usr/local maps to lib/python3.X/dist-packages (on Debian python3's
sys.path); any other prefix to posix_prefix's lib/python3.X/site-packages."""
import os
import sys
import sysconfig

prefix = os.path.normpath(sys.argv[1])
scheme = sysconfig.get_default_scheme() if hasattr(sysconfig, "get_default_scheme") else None
if scheme == "posix_local":
    if prefix == "/usr/local":
        path = sysconfig.get_path("platlib", scheme, vars={"base": "/usr", "platbase": "/usr"})
    else:
        path = sysconfig.get_path("platlib", "posix_prefix", vars={"base": prefix, "platbase": prefix})
else:
    path = sysconfig.get_path("platlib", scheme, vars={"base": prefix, "platbase": prefix}) \
        if scheme else sysconfig.get_path("platlib", vars={"base": prefix, "platbase": prefix})
path = os.path.normpath(path)
if os.path.commonpath([path, prefix]) != prefix:  # a scheme outside the prefix: its own layout
    path = sysconfig.get_path("platlib", "posix_prefix", vars={"base": prefix, "platbase": prefix})
print(os.path.relpath(path, prefix))
