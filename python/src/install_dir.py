"""Prints where `cmake --install` puts the package for this interpreter under PREFIX (argv[1]):
its platlib. Debian's default scheme (posix_local) already adds /local, so /usr/local maps to
/usr/local/lib/python3.X/dist-packages, which Debian's python3 has on sys.path."""
import os
import sys
import sysconfig

prefix = sys.argv[1]
scheme = sysconfig.get_default_scheme() if hasattr(sysconfig, "get_default_scheme") else None
if scheme == "posix_local":
    if os.path.normpath(prefix) == "/usr/local":
        path = sysconfig.get_path("platlib", scheme, vars={"base": "/usr", "platbase": "/usr"})
    else:
        path = sysconfig.get_path("platlib", "posix_prefix", vars={"base": prefix, "platbase": prefix})
else:
    path = sysconfig.get_path("platlib", scheme, vars={"base": prefix, "platbase": prefix}) \
        if scheme else sysconfig.get_path("platlib", vars={"base": prefix, "platbase": prefix})
print(path)
