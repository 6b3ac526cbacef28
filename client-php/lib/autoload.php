<?php
/* client-php/lib/autoload.php - Mdcached\Cache classes, plus Debian's
 * autoloaders of the interfaces they implement when installed
 * (php-psr-simple-cache, php-psr-cache, php-symfony-cache,
 * php-illuminate-cache). */
foreach (['Psr/SimpleCache', 'Psr/Cache', 'Symfony/Component/Cache', 'Illuminate/Cache'] as $d) {
    foreach (explode(PATH_SEPARATOR, get_include_path()) as $p) {
        if (is_file("$p/$d/autoload.php")) {
            require_once "$p/$d/autoload.php";
            break;
        }
    }
}
spl_autoload_register(function (string $class) {
    if ($class === 'Mdcached\\Client') { // the extension is not loaded
        require __DIR__ . '/ext-check/Client.php';
    }
    if (strncmp($class, 'Mdcached\\Cache\\', 15) === 0) {
        $f = __DIR__ . '/src/' . substr($class, 15) . '.php';
        if (is_file($f)) {
            require $f;
        }
    }
});
