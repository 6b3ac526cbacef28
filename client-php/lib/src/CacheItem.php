<?php
namespace Mdcached\Cache;

use Psr\Cache\CacheItemInterface;

/** PSR-6 item of CacheItemPool (psr/cache 1.0 to 3.0: see Base). */
final class CacheItem implements CacheItemInterface
{
    private string $key;
    private $value;
    private bool $hit;
    /** @var float|null absolute expiry (Unix time); null: the pool's default */
    private ?float $expiry = null;

    public function __construct(string $key, $value = null, bool $hit = false)
    {
        $this->key = $key;
        $this->value = $value;
        $this->hit = $hit;
    }

    public function getKey(): string
    {
        return $this->key;
    }

    public function get(): mixed
    {
        return $this->hit ? $this->value : null;
    }

    public function isHit(): bool
    {
        return $this->hit;
    }

    public function set($value): static
    {
        $this->value = $value;
        return $this;
    }

    public function expiresAt($expiration): static
    {
        if ($expiration === null) {
            $this->expiry = null;
        } elseif ($expiration instanceof \DateTimeInterface) {
            $this->expiry = (float)$expiration->format('U.u');
        } else {
            throw new InvalidArgumentException('expiresAt() takes a DateTimeInterface or null, ' . get_debug_type($expiration) . ' given');
        }
        return $this;
    }

    public function expiresAfter($time): static
    {
        if ($time === null) {
            $this->expiry = null;
        } elseif ($time instanceof \DateInterval) {
            $this->expiry = (float)(new \DateTimeImmutable())->add($time)->format('U.u');
        } elseif (is_int($time)) {
            $this->expiry = microtime(true) + $time;
        } else {
            throw new InvalidArgumentException('expiresAfter() takes an int, a DateInterval or null, ' . get_debug_type($time) . ' given');
        }
        return $this;
    }

    /** @internal the pool's view: value and expiry */
    public function pending(): array
    {
        return [$this->value, $this->expiry];
    }
}
