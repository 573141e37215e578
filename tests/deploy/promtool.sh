#!/bin/sh
# `promtool ARGS...` for the deploy_promtool_* CTest tests; exits 77 (CTest
# SKIP_RETURN_CODE) when promtool is not installed (Debian: prometheus).
if ! command -v promtool >/dev/null 2>&1; then
  echo "skipped: promtool is not installed (apt-get install prometheus)"
  exit 77
fi
exec promtool "$@"
