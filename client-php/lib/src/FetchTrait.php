<?php
namespace Mdcached\Cache;

use Mdcached\Client;

/**
 * Reads for the PSR caches and the Symfony adapter.  A stored value that
 * cannot be unserialized (a class whose __wakeup throws, a class gone) is a
 * miss, as in Symfony's own adapters, and the other keys of the same read
 * still hit; a server failure stays a CacheException.
 */
trait FetchTrait
{
    /** @param string[] $ids  @return array id => value of the hits */
    private static function fetchFrom(Client $client, array $ids): array
    {
        if (!$ids) {
            return [];
        }
        try {
            $r = $client->getMulti(array_values($ids));
        } catch (\Mdcached\Exception $e) {
            throw new CacheException('mdcached: get failed: ' . $e->getMessage(), $e->getCode(), $e);
        } catch (\Throwable $e) {
            // unserialize threw for one of the values: find which, one by one
            return self::fetchEach($client, $ids);
        }
        if ($r === false) {
            throw new CacheException('mdcached: get failed: ' . $client->getResultMessage(),
                                     $client->getResultCode());
        }
        return $r;
    }

    private static function fetchEach(Client $client, array $ids): array
    {
        $out = [];
        foreach ($ids as $id) {
            try {
                $v = $client->get($id);
            } catch (\Mdcached\Exception $e) {
                throw new CacheException('mdcached: get failed: ' . $e->getMessage(), $e->getCode(), $e);
            } catch (\Throwable $e) {
                continue; // a miss
            }
            $rc = $client->getResultCode();
            if ($rc === Client::RES_SUCCESS) {
                $out[$id] = $v;
            } elseif ($rc !== Client::RES_NOTFOUND) {
                throw new CacheException('mdcached: get failed: ' . $client->getResultMessage(), $rc);
            }
        }
        return $out;
    }
}
