#!/bin/sh
# MPQUIC_BIN for the testbed runner: the mpquic CLI, with `send` also writing a qlog trace into
# $QLOG_DIR (the runner itself does not ask for one).
if [ "$1" = send ]; then
  exec "$MPQUIC_REAL" "$@" --qlog "$QLOG_DIR"
fi
exec "$MPQUIC_REAL" "$@"
