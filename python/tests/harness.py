"""What the python tests share: the repository root on sys.path, torch when installed, and the
`inplace` binary ($INPLACE_BIN, default build/inplace under the repository root)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

try:
    import torch
except ImportError:  # pragma: no cover - exercised only without torch
    torch = None

BIN = os.environ.get("INPLACE_BIN", os.path.join(REPO, "build", "inplace"))
if not os.path.isabs(BIN):
    BIN = os.path.join(REPO, BIN)
