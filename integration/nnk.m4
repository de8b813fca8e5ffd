# nnk.m4 - Autoconf macros for projects that compile .nnk kernels.
# Installed in $(datadir)/aclocal; see docs/build-integration.md.
#
# NNK_PROG_NNKC([ACTION-IF-FOUND], [ACTION-IF-NOT-FOUND])
#   Finds the nnkc compiler: $NNKC if set, else the one pkg-config's nnk.pc
#   names (variable nnkc), else nnkc on PATH.  AC_SUBSTs NNKC and
#   nnk_rules: put a line "@nnk_rules@" in Makefile.am to get the rules
#   that build .o, .lo and .h files from .nnk sources, with depfiles.
#   Without ACTION-IF-NOT-FOUND a missing nnkc is an error.
#
# NNK_CHECK_RUNTIME([MIN-VERSION], [ACTION-IF-FOUND], [ACTION-IF-NOT-FOUND])
#   Checks for the runtime library with pkg-config and AC_SUBSTs NNK_CFLAGS
#   and NNK_LIBS.  Without ACTION-IF-NOT-FOUND a missing runtime is an error.

# serial 1

AC_DEFUN([NNK_PROG_NNKC], [
  AC_REQUIRE([PKG_PROG_PKG_CONFIG])
  AC_ARG_VAR([NNKC], [the nnk kernel compiler (nnkc)])
  AC_ARG_VAR([NNKCFLAGS], [flags for nnkc])
  AC_MSG_CHECKING([for nnkc])
  if test -z "$NNKC" && test -n "$PKG_CONFIG"; then
    NNKC=`$PKG_CONFIG --variable=nnkc nnk 2>/dev/null`
    test -x "$NNKC" || NNKC=
  fi
  if test -z "$NNKC"; then
    AC_PATH_PROG([NNKC], [nnkc], [])
  fi
  if test -n "$NNKC"; then
    AC_MSG_RESULT([$NNKC])
    nnk_mk=`$PKG_CONFIG --variable=mkfile nnk 2>/dev/null`
    if test -z "$nnk_mk" || test ! -f "$nnk_mk"; then
      nnk_mk=`dirname "$NNKC"`/../share/nnk/nnk.mk
    fi
    if test ! -f "$nnk_mk"; then
      AC_MSG_ERROR([nnkc found but not its make rules (nnk.mk); is nnk installed completely?])
    fi
    nnk_rules=$nnk_mk
    AC_SUBST_FILE([nnk_rules])
    $1
  else
    AC_MSG_RESULT([no])
    m4_default([$2], [AC_MSG_ERROR([nnkc not found: install nnk, or set NNKC or PKG_CONFIG_PATH])])
  fi
  AC_SUBST([NNKC])
])

AC_DEFUN([NNK_CHECK_RUNTIME], [
  AC_REQUIRE([PKG_PROG_PKG_CONFIG])
  PKG_CHECK_MODULES([NNK], [nnk m4_ifval([$1], [>= $1])], [$2],
    [m4_default([$3], [AC_MSG_ERROR([the nnk runtime library was not found: $NNK_PKG_ERRORS])])])
])
