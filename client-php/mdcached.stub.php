<?php

/**
 * mdcached.stub.php - the API of the mdcached extension; the arginfo
 * header mdcached_arginfo.h is generated from it by PHP's gen_stub.php
 * (client-php/gen-arginfo.sh) and committed.
 *
 * @generate-class-entries
 */

namespace Mdcached {

    class Client
    {
        public function __construct(?string $persistentId = null) {}

        public function addServer(string $host, int $port = 11311, int $weight = 0): bool {}

        public function addServers(array $servers): bool {}

        public function getServerList(): array {}

        public function getServerByKey(string $key): array|false {}

        public function resetServerList(): bool {}

        public function isPersistent(): bool {}

        public function isPristine(): bool {}

        public function setOption(int $option, mixed $value): bool {}

        public function setOptions(array $options): bool {}

        public function getOption(int $option): mixed {}

        public function getResultCode(): int {}

        public function getResultMessage(): string {}

        public function getServerResults(): array {}

        public function get(string $key, ?callable $cacheCallback = null, int $flags = 0): mixed {}

        /** @param int $state */
        public function leaseGet(string $key, int $vivifyTtl = 0, int $recacheTtl = 0, &$state = null, int $flags = 0): mixed {}

        public function getMulti(array $keys, int $flags = 0): array|false {}

        public function set(string $key, mixed $value, int $ttl = 0, array $tags = []): bool {}

        public function setMulti(array $items, int $ttl = 0, array $tags = []): bool {}

        public function add(string $key, mixed $value, int $ttl = 0, array $tags = []): bool {}

        public function replace(string $key, mixed $value, int $ttl = 0, array $tags = []): bool {}

        public function cas(int|string $casToken, string $key, mixed $value, int $ttl = 0, array $tags = []): bool {}

        public function append(string $key, string $value): bool {}

        public function prepend(string $key, string $value): bool {}

        public function delete(string $key): bool {}

        public function deleteStale(string $key, int $ttl = 0): bool {}

        public function deleteMulti(array $keys): array {}

        public function increment(string $key, int $offset = 1, int $initialValue = 0, int $ttl = 0): int|false {}

        public function decrement(string $key, int $offset = 1, int $initialValue = 0, int $ttl = 0): int|false {}

        public function touch(string $key, int $ttl): bool {}

        public function flush(int $delay = 0): bool {}

        public function getStats(?string $type = null): array|false {}

        public function getVersion(): array|false {}

        public function getByTag(int|string|array $tag, int|array|null $tvals = null): array|false {}

        public function deleteByTag(int|string|array $tag, int|array|null $tvals = null): int|false {}

        public function deleteByTagStale(int|string|array $tag, int|array|null $tvals = null, int $ttl = 0): int|false {}

        public function tagPush(int|string $tag, mixed $value, int $ttl = 0, int|null $tval = null): string|false {}

        public function tagPop(int|string $tag, int|null $tval = null): mixed {}

        public function cmpSet(string $key, int $expect, int $desired): bool {}

        public function fetchAdd(string $key, int $delta): int|false {}

        public function readAndClear(string $key): int|false {}

        public function quit(): bool {}

        public function setSaslAuthData(string $username, string $password): bool {}

        public function setTls(?array $options): bool {}

        /** @return array{0: int, 1: int} */
        public static function tagOf(string $tag): array {}
    }

    class Exception extends \RuntimeException
    {
    }
}
