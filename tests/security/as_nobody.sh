#!/usr/bin/env bash
# Part of `make test`: the sandbox's security suite once more as an unprivileged user (CI runs as
# root, and the sandbox takes another path without root). `nobody` cannot reach a pyenv interpreter
# under /root (mode 0700), so a private mount namespace binds the interpreter's prefix at
# /opt/rsi-ci-python, and a world-readable copy of the checkout runs from /tmp; nothing on the host is
# changed. Not root: the suite already ran unprivileged in the main pytest run, nothing more to do.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PY:-python3}"
if [ "$(id -u)" != 0 ]; then
  echo "security suite as nobody: skipped (not root; the main run was already unprivileged)"
  exit 0
fi
: "${RSI_WORKBENCH_DATA:=$(cd ../shared/datasets && pwd)}"
PYROOT="$("$PY" -c 'import sys; print(sys.base_prefix)')"
PYBIN="$(basename "$("$PY" -c 'import sys; print(sys.executable)')")"
WORK="$(mktemp -d /tmp/rsi-ci-nobody.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$WORK"
chmod -R a+rX "$WORK"
unshare --mount --propagation private -- bash -c '
  set -euo pipefail
  mkdir -p /opt/rsi-ci-python && mount --bind "$1" /opt/rsi-ci-python
  cd "$2"
  runuser -u nobody -- env -i PATH=/usr/bin:/bin HOME=/tmp PYTHONPATH="$2" PYTHONDONTWRITEBYTECODE=1 \
    LD_LIBRARY_PATH=/opt/rsi-ci-python/lib RSI_WORKBENCH_DATA="$3" RSI_WORKBENCH_SANDBOX_MODE=required \
    "/opt/rsi-ci-python/bin/$4" -m pytest -q -p no:cacheprovider tests/security
' bash "$PYROOT" "$WORK" "$RSI_WORKBENCH_DATA" "$PYBIN"
