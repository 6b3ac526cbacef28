<?php
namespace Mdcached\Cache;

use Illuminate\Cache\Lock;
use Mdcached\Client;

/**
 * An atomic lock of LaravelStore (Cache::lock()).  The record <prefix><name>
 * holds the owner token.  acquire() is an add, which one caller wins;
 * release() deletes the record only if it still holds this owner's token,
 * atomically: it reads the record's version (cas) and replaces exactly that
 * version with an already expired record (a cas with a negative expiry),
 * so a lock that expired and was taken by another owner between the read
 * and the write is left alone.  block() and get() come from Laravel's Lock.
 */
class LaravelLock extends Lock
{
    protected Client $client;

    public function __construct(Client $client, $name, $seconds, $owner = null)
    {
        parent::__construct($name, $seconds, $owner);
        $this->client = $client;
    }

    public function acquire()
    {
        $s = (int)$this->seconds;
        return $this->client->add($this->name, $this->owner, $s > 2592000 ? time() + $s : max($s, 0));
    }

    public function release()
    {
        $r = $this->client->get($this->name, null, Client::GET_EXTENDED);
        if (!is_array($r) || $r['value'] !== $this->owner) {
            return false;
        }
        return $this->client->cas($r['cas'], $this->name, '', -1);
    }

    /** Releases the lock whoever holds it. */
    public function forceRelease()
    {
        $this->client->delete($this->name);
    }

    protected function getCurrentOwner()
    {
        $v = $this->client->get($this->name);
        return $v === false && $this->client->getResultCode() !== Client::RES_SUCCESS ? null : $v;
    }
}
