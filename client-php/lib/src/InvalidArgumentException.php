<?php
/* Mdcached\Cache - PSR-16, PSR-6, Symfony and Laravel caches over the
 * mdcached extension (docs/client-php.md). */
namespace Mdcached\Cache;

/** A bad key or TTL, for both PSR-16 and PSR-6. */
class InvalidArgumentException extends \InvalidArgumentException implements
    \Psr\SimpleCache\InvalidArgumentException,
    \Psr\Cache\InvalidArgumentException
{
}
