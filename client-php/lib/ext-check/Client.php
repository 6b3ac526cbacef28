<?php
/*
 * Autoloaded for Mdcached\Client only when the mdcached extension is not
 * loaded (PHP never asks an autoloader for an extension's class): say so,
 * instead of PHP's bare 'Class "Mdcached\Client" not found'.
 */
throw new \LogicException(
    'mdcached/cache needs the mdcached PHP extension (ext-mdcached), which is not loaded in this PHP (' .
    PHP_BINARY . ', ' . (php_ini_loaded_file() ?: 'no php.ini') . '): install it (apt install php-mdcached, ' .
    'pecl install mdcached, or pie install mdcached/mdcached) and enable it with extension=mdcached'
);
