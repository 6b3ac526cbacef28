dnl client-php/config.m4 - phpize configuration of the mdcached extension.
dnl   phpize && ./configure --with-mdcached[=DIR] && make
dnl DIR is a prefix holding include/mdcached.h and lib/libmdcached.so
dnl (without DIR: pkg-config's libmdcached, else /usr/local, else /usr); the
dnl project build passes --with-mdcached-include/--with-mdcached-lib instead
dnl (the header in client-c/, the library in the build tree's .libs).
PHP_ARG_WITH([mdcached],
  [for mdcached support],
  [AS_HELP_STRING([[--with-mdcached[=DIR]]], [Include mdcached support (libmdcached prefix)])])
PHP_ARG_WITH([mdcached-include], [for libmdcached's header directory],
  [AS_HELP_STRING([--with-mdcached-include=DIR], [directory of mdcached.h])], [no], [no])
PHP_ARG_WITH([mdcached-lib], [for libmdcached's library directory],
  [AS_HELP_STRING([--with-mdcached-lib=DIR], [directory of libmdcached.so])], [no], [no])

if test "$PHP_MDCACHED" != "no"; then
  dnl where libmdcached is: DIR, or (plain --with-mdcached, as pecl and
  dnl PIE run it) pkg-config's libmdcached.pc, else /usr/local, else /usr
  if test "$PHP_MDCACHED" != "yes"; then
    MDC_PREFIX_INC=$PHP_MDCACHED/include
    MDC_PREFIX_LIB=$PHP_MDCACHED/$PHP_LIBDIR
  else
    AC_PATH_PROG(MDC_PKG_CONFIG, pkg-config, no)
    if test "$MDC_PKG_CONFIG" != "no" && $MDC_PKG_CONFIG --exists libmdcached; then
      MDC_PREFIX_INC=`$MDC_PKG_CONFIG --variable=includedir libmdcached`
      MDC_PREFIX_LIB=`$MDC_PKG_CONFIG --variable=libdir libmdcached`
    else
      MDC_PREFIX_INC=/usr/local/include
      MDC_PREFIX_LIB=/usr/local/$PHP_LIBDIR
      for p in /usr/local /usr; do
        if test -r "$p/include/mdcached.h"; then
          MDC_PREFIX_INC=$p/include
          MDC_PREFIX_LIB=$p/$PHP_LIBDIR
          break
        fi
      done
    fi
  fi
  if test "$PHP_MDCACHED_INCLUDE" != "no"; then
    MDC_INC=$PHP_MDCACHED_INCLUDE
  else
    MDC_INC=$MDC_PREFIX_INC
  fi
  if test "$PHP_MDCACHED_LIB" != "no"; then
    MDC_LIB=$PHP_MDCACHED_LIB
  else
    MDC_LIB=$MDC_PREFIX_LIB
  fi
  AC_MSG_CHECKING([for mdcached.h])
  if test -r "$MDC_INC/mdcached.h"; then
    AC_MSG_RESULT([$MDC_INC])
  else
    AC_MSG_ERROR([mdcached.h not found in $MDC_INC])
  fi
  PHP_ADD_INCLUDE($MDC_INC)
  PHP_CHECK_LIBRARY(mdcached, mdc_pool_create,
    [PHP_ADD_LIBRARY_WITH_PATH(mdcached, $MDC_LIB, MDCACHED_SHARED_LIBADD)],
    [AC_MSG_ERROR([libmdcached not found in $MDC_LIB])],
    [-L$MDC_LIB])
  PHP_CHECK_LIBRARY(z, compress2,
    [PHP_ADD_LIBRARY(z, 1, MDCACHED_SHARED_LIBADD)],
    [AC_MSG_ERROR([zlib not found (zlib1g-dev)])])
  PHP_CHECK_LIBRARY(zstd, ZSTD_compress,
    [PHP_ADD_LIBRARY(zstd, 1, MDCACHED_SHARED_LIBADD)],
    [AC_MSG_ERROR([libzstd not found (libzstd-dev)])])
  PHP_ADD_EXTENSION_DEP(mdcached, session, true)
  PHP_SUBST(MDCACHED_SHARED_LIBADD)
  PHP_NEW_EXTENSION(mdcached, mdcached.c mdcached_session.c, $ext_shared,, -DZEND_ENABLE_STATIC_TSRMLS_CACHE=1)
fi
