dnl client-php/config.m4 - phpize configuration of the mdcached extension.
dnl   phpize && ./configure --with-mdcached[=DIR] && make
dnl DIR is a prefix holding include/mdcached.h and lib/libmdcached.so; the
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
  if test "$PHP_MDCACHED_INCLUDE" != "no"; then
    MDC_INC=$PHP_MDCACHED_INCLUDE
  elif test "$PHP_MDCACHED" != "yes"; then
    MDC_INC=$PHP_MDCACHED/include
  else
    MDC_INC=/usr/local/include
  fi
  if test "$PHP_MDCACHED_LIB" != "no"; then
    MDC_LIB=$PHP_MDCACHED_LIB
  elif test "$PHP_MDCACHED" != "yes"; then
    MDC_LIB=$PHP_MDCACHED/$PHP_LIBDIR
  else
    MDC_LIB=/usr/local/$PHP_LIBDIR
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
