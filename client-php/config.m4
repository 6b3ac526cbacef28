dnl client-php/config.m4 - phpize configuration of the mdcached extension.
dnl   phpize && ./configure --with-mdcached[=DIR|bundled] && make
dnl DIR is a prefix holding include/mdcached.h and lib/libmdcached.so.
dnl Without DIR (as pecl and PIE run it): an installed libmdcached that has
dnl the functions this extension calls (pkg-config's libmdcached, else
dnl /usr/local, else /usr), else the libmdcached sources the PECL package
dnl carries (libmdcached/, built into mdcached.so); "bundled" forces those.
dnl The project build passes --with-mdcached-include/--with-mdcached-lib
dnl instead (the header in client-c/, the library in the build tree's .libs).
dnl OpenSSL (TLS), zlib and libzstd (compression) are each used when found
dnl (libssl-dev, zlib1g-dev, libzstd-dev); php-dev alone brings libssl-dev.
PHP_ARG_WITH([mdcached],
  [for mdcached support],
  [AS_HELP_STRING([[--with-mdcached[=DIR|bundled]]], [Include mdcached support (libmdcached prefix, or the bundled sources)])])
PHP_ARG_WITH([mdcached-include], [for libmdcached's header directory],
  [AS_HELP_STRING([--with-mdcached-include=DIR], [directory of mdcached.h])], [no], [no])
PHP_ARG_WITH([mdcached-lib], [for libmdcached's library directory],
  [AS_HELP_STRING([--with-mdcached-lib=DIR], [directory of libmdcached.so])], [no], [no])

if test "$PHP_MDCACHED" != "no"; then
  dnl (PHP_NEW_EXTENSION sets ext_srcdir only at the end)
  mdc_srcdir=PHP_EXT_SRCDIR(mdcached)
  mdc_builddir=PHP_EXT_BUILDDIR(mdcached)
  MDC_BUNDLED=no
  MDC_INC=
  MDC_LIB=
  if test "$PHP_MDCACHED_INCLUDE" != "no" || test "$PHP_MDCACHED_LIB" != "no"; then
    MDC_INC=$PHP_MDCACHED_INCLUDE
    MDC_LIB=$PHP_MDCACHED_LIB
    if test "$PHP_MDCACHED" != "yes" && test "$PHP_MDCACHED" != "bundled"; then
      test "$MDC_INC" = "no" && MDC_INC=$PHP_MDCACHED/include
      test "$MDC_LIB" = "no" && MDC_LIB=$PHP_MDCACHED/$PHP_LIBDIR
    fi
  elif test "$PHP_MDCACHED" = "bundled"; then
    MDC_BUNDLED=yes
  elif test "$PHP_MDCACHED" != "yes"; then
    MDC_INC=$PHP_MDCACHED/include
    MDC_LIB=$PHP_MDCACHED/$PHP_LIBDIR
  else
    dnl autodetect: an installed libmdcached, else the bundled sources
    AC_PATH_PROG(MDC_PKG_CONFIG, pkg-config, no)
    if test "$MDC_PKG_CONFIG" != "no" && $MDC_PKG_CONFIG --exists libmdcached; then
      MDC_INC=`$MDC_PKG_CONFIG --variable=includedir libmdcached`
      MDC_LIB=`$MDC_PKG_CONFIG --variable=libdir libmdcached`
    else
      for p in /usr/local /usr; do
        if test -r "$p/include/mdcached.h"; then
          MDC_INC=$p/include
          MDC_LIB=$p/$PHP_LIBDIR
          break
        fi
      done
    fi
    if test -n "$MDC_INC" && test -r "$MDC_INC/mdcached.h"; then
      dnl mdc_lease_get: the newest function the extension calls
      PHP_CHECK_LIBRARY(mdcached, mdc_lease_get, [],
        [if test -r "$mdc_srcdir/libmdcached/client-c/mdcached.h"; then
           AC_MSG_NOTICE([the libmdcached in $MDC_LIB lacks mdc_lease_get (too old): using the bundled sources])
           MDC_BUNDLED=yes
         else
           AC_MSG_ERROR([libmdcached in $MDC_LIB lacks mdc_lease_get: too old for this extension])
         fi],
        [-L$MDC_LIB])
    elif test -r "$mdc_srcdir/libmdcached/client-c/mdcached.h"; then
      MDC_BUNDLED=yes
    else
      AC_MSG_ERROR([libmdcached not found (pkg-config libmdcached, /usr/local, /usr): install libmdcached-dev, give --with-mdcached=PREFIX, or build from the PECL package, which carries libmdcached's sources])
    fi
  fi

  MDC_SOURCES="mdcached.c mdcached_session.c"
  MDC_CFLAGS="-DZEND_ENABLE_STATIC_TSRMLS_CACHE=1"
  AC_MSG_CHECKING([which libmdcached to use])
  if test "$MDC_BUNDLED" = "yes"; then
    AC_MSG_RESULT([bundled (libmdcached/, built into mdcached.so)])
    test -r "$mdc_srcdir/libmdcached/client-c/mdcached.h" ||
      AC_MSG_ERROR([--with-mdcached=bundled: no libmdcached/ here (the PECL package carries it)])
    MDC_SOURCES="$MDC_SOURCES libmdcached/client-c/conn.c libmdcached/client-c/ops.c libmdcached/client-c/pool.c libmdcached/client-c/spool.c libmdcached/client-c/sg.c libmdcached/client-c/ketama.c libmdcached/client-c/md5.c libmdcached/client-c/tls.c libmdcached/protocol/wire.c libmdcached/protocol/mctext.c libmdcached/protocol/mcbin.c"
    dnl the bundled library's symbols stay inside mdcached.so
    MDC_CFLAGS="$MDC_CFLAGS -fvisibility=hidden -pthread"
    PHP_ADD_INCLUDE([$mdc_srcdir/libmdcached/client-c])
    PHP_ADD_INCLUDE([$mdc_srcdir/libmdcached])
    PHP_ADD_BUILD_DIR([$mdc_builddir/libmdcached/client-c], 1)
    PHP_ADD_BUILD_DIR([$mdc_builddir/libmdcached/protocol], 1)
    dnl TLS when OpenSSL 3 is there (detected here, as the project's configure does)
    AC_CHECK_HEADER([openssl/ssl.h], [mdc_ssl_h=yes], [mdc_ssl_h=no])
    if test "$mdc_ssl_h" = "yes"; then
      PHP_CHECK_LIBRARY(ssl, SSL_CTX_new_ex,
        [AC_DEFINE([HAVE_OPENSSL], [1], [bundled libmdcached with TLS (OpenSSL 3)])
         PHP_ADD_LIBRARY(ssl, 1, MDCACHED_SHARED_LIBADD)
         PHP_ADD_LIBRARY(crypto, 1, MDCACHED_SHARED_LIBADD)
         mdc_tls=yes],
        [mdc_tls=no], [-lcrypto])
    else
      mdc_tls=no
    fi
    AC_MSG_CHECKING([for TLS in the bundled libmdcached])
    AC_MSG_RESULT([$mdc_tls])
  else
    AC_MSG_RESULT([installed: $MDC_INC, $MDC_LIB])
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
  fi

  dnl compression: each library when found (a value compressed with one that
  dnl is missing reads as RES_PAYLOAD_FAILURE; docs/client-php.md)
  AC_CHECK_HEADER([zlib.h], [mdc_zlib_h=yes], [mdc_zlib_h=no])
  mdc_zlib=no
  if test "$mdc_zlib_h" = "yes"; then
    PHP_CHECK_LIBRARY(z, uncompress2,
      [PHP_ADD_LIBRARY(z, 1, MDCACHED_SHARED_LIBADD)
       AC_DEFINE([MDC_HAVE_ZLIB], [1], [zlib compression])
       mdc_zlib=yes])
  fi
  AC_CHECK_HEADER([zstd.h], [mdc_zstd_h=yes], [mdc_zstd_h=no])
  mdc_zstd=no
  if test "$mdc_zstd_h" = "yes"; then
    PHP_CHECK_LIBRARY(zstd, ZSTD_compress,
      [PHP_ADD_LIBRARY(zstd, 1, MDCACHED_SHARED_LIBADD)
       AC_DEFINE([MDC_HAVE_ZSTD], [1], [zstd compression])
       mdc_zstd=yes])
  fi
  AC_MSG_CHECKING([for compression])
  AC_MSG_RESULT([zlib $mdc_zlib, zstd $mdc_zstd])

  PHP_ADD_EXTENSION_DEP(mdcached, session, true)
  PHP_SUBST(MDCACHED_SHARED_LIBADD)
  PHP_NEW_EXTENSION(mdcached, $MDC_SOURCES, $ext_shared,, $MDC_CFLAGS)
fi
