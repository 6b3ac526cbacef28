<?php
/* client-php/lib/autoload.php - Mdcached\Cache classes, plus Debian's
 * autoloaders of the interfaces they implement when installed
 * (php-psr-simple-cache, php-psr-cache, php-symfony-cache,
 * php-illuminate-cache) and of the container Mdcached\Cache\LaravelServiceProvider
 * is registered in (php-illuminate-container).
 * In the source tree the classes are in src/; the Debian package installs
 * this file beside them, as /usr/share/php/Mdcached/Cache/autoload.php. */
foreach (['Psr/SimpleCache', 'Psr/Cache', 'Symfony/Component/Cache', 'Illuminate/Cache',
          'Illuminate/Container'] as $d) {
    foreach (explode(PATH_SEPARATOR, get_include_path()) as $p) {
        if (is_file("$p/$d/autoload.php")) {
            require_once "$p/$d/autoload.php";
            break;
        }
    }
}
spl_autoload_register(function (string $class) {
    static $dir = null;
    $dir ??= is_dir(__DIR__ . '/src') ? __DIR__ . '/src/' : __DIR__ . '/';
    if ($class === 'Mdcached\\Client') { // the extension is not loaded
        require __DIR__ . '/ext-check/Client.php';
    }
    if (strncmp($class, 'Mdcached\\Cache\\', 15) === 0) {
        $f = $dir . str_replace('\\', '/', substr($class, 15)) . '.php';
        if (is_file($f)) {
            require $f;
        }
    }
});
