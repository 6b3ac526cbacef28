<?php
namespace Mdcached\Cache;

/** The server failed (connection, too large, ...): PSR-16 and PSR-6. */
class CacheException extends \RuntimeException implements
    \Psr\SimpleCache\CacheException,
    \Psr\Cache\CacheException
{
}
