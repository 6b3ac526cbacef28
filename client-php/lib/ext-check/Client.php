<?php
/*
 * Autoloaded for Mdcached\Client only when the mdcached extension is not
 * loaded (PHP never asks an autoloader for an extension's class): say so,
 * instead of PHP's bare 'Class "Mdcached\Client" not found'.  The commands
 * named are the ones client-php/tests/packaging.sh and tools/deb-check.sh
 * run (no registry holds the extension yet).
 */
throw new \LogicException(
    'mdcached/cache needs the mdcached PHP extension (ext-mdcached), which is not loaded in this PHP (' .
    PHP_BINARY . ', ' . (php_ini_loaded_file() ?: 'no php.ini') . '): build it from the mdcached source tree, ' .
    'with php-dev and php-pear: "sh client-php/pecl-package.sh && pecl install mdcached-*.tgz" ' .
    '(or install the php-mdcached Debian package built from that tree, docs/packaging.md), ' .
    'then enable it with extension=mdcached (docs/client-php.md, "Installing")'
);
