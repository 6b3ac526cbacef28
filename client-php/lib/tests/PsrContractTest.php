<?php
use Mdcached\Cache\CacheItemPool;
use Mdcached\Cache\SimpleCache;
use PHPUnit\Framework\TestCase;

/** A value that cannot come back: unserialize() throws. */
final class MdcWakeupThrows
{
    public $x = 1;

    public function __wakeup(): void
    {
        throw new RuntimeException('cannot wake up');
    }
}

/**
 * The PSR-6 and PSR-16 contracts where the classes broke them: keys that are
 * not strings, a value that cannot be unserialized, numeric-string keys.
 * Runs in every set (PSR 1.0 and 3.0).
 */
final class PsrContractTest extends TestCase
{
    private Mdcached\Client $c;
    private SimpleCache $cache;
    private CacheItemPool $pool;

    protected function setUp(): void
    {
        $this->c = mdc_test_client();
        $this->c->flush();
        $this->cache = new SimpleCache($this->c, 'p16');
        $this->pool = new CacheItemPool($this->c, 'p6');
    }

    /** Each call must throw the PSR InvalidArgumentException, and nothing else (no warning, no Error). */
    private function assertAllRefused(array $calls, string $psr): void
    {
        foreach ($calls as $what => $call) {
            try {
                $r = $call();
                if ($r instanceof Traversable) {
                    iterator_to_array($r);
                }
                $this->fail("$what: accepted");
            } catch (Throwable $e) {
                $this->assertInstanceOf($psr, $e, "$what: " . get_class($e) . ': ' . $e->getMessage());
            }
        }
    }

    public function testIntegerKeysRefused(): void
    {
        $s = $this->cache;
        $this->assertAllRefused([
            'get' => fn() => $s->get(2), 'set' => fn() => $s->set(2, 'v'), 'has' => fn() => $s->has(2),
            'delete' => fn() => $s->delete(2), 'getMultiple' => fn() => $s->getMultiple(['a', 2]),
            'deleteMultiple' => fn() => $s->deleteMultiple([2]),
            'setMultiple from a generator' => fn() => $s->setMultiple((function () { yield 2 => 'v'; })()),
        ], Psr\SimpleCache\InvalidArgumentException::class);
        $p = $this->pool;
        $this->assertAllRefused([
            'getItem' => fn() => $p->getItem(2), 'getItems' => fn() => $p->getItems(['a', 2]),
            'hasItem' => fn() => $p->hasItem(2), 'deleteItem' => fn() => $p->deleteItem(2),
            'deleteItems' => fn() => $p->deleteItems([2]),
        ], Psr\Cache\InvalidArgumentException::class);
        $this->assertFalse($this->c->get('p16:2'), 'nothing stored under "2"');
    }

    public function testObjectAndArrayKeysRefusedBeforeAnyCast(): void
    {
        foreach (['object' => new stdClass(), 'array' => ['k'], 'null' => null, 'float' => 1.5, 'bool' => true] as $type => $bad) {
            $s = $this->cache;
            $this->assertAllRefused([
                "get($type)" => fn() => $s->get($bad), "getMultiple($type)" => fn() => $s->getMultiple([$bad]),
                "has($type)" => fn() => $s->has($bad), "deleteMultiple($type)" => fn() => $s->deleteMultiple(['ok', $bad]),
            ], Psr\SimpleCache\InvalidArgumentException::class);
            $p = $this->pool;
            $this->assertAllRefused([
                "getItem($type)" => fn() => $p->getItem($bad), "getItems($type)" => fn() => $p->getItems([$bad]),
                "hasItem($type)" => fn() => $p->hasItem($bad), "deleteItems($type)" => fn() => $p->deleteItems([$bad]),
            ], Psr\Cache\InvalidArgumentException::class);
        }
    }

    public function testUnserializableValueIsAMiss(): void
    {
        $this->c->set('p16:bad', new MdcWakeupThrows());
        $this->c->set('p6:bad', new MdcWakeupThrows());
        $this->cache->set('good', 'G');
        $this->pool->save($this->pool->getItem('good')->set('G'));
        $this->assertSame('dflt', $this->cache->get('bad', 'dflt'));
        $this->assertFalse($this->cache->has('bad'));
        $this->assertSame(['bad' => null, 'good' => 'G'], iterator_to_array($this->cache->getMultiple(['bad', 'good'])));
        $this->assertFalse($this->pool->getItem('bad')->isHit());
        $this->assertFalse($this->pool->hasItem('bad'));
        $hits = array_map(fn($i) => $i->isHit() ? $i->get() : 'miss', iterator_to_array($this->pool->getItems(['bad', 'good'])));
        $this->assertSame(['bad' => 'miss', 'good' => 'G'], $hits, 'the other keys of the read still hit');
        // a miss, not a broken connection: the next requests work
        $this->assertTrue($this->cache->set('after', 1));
        $this->assertSame(1, $this->cache->get('after'));
    }

    public function testNumericStringKeysStayStrings(): void
    {
        $this->cache->setMultiple(['123' => 'a', '7' => 'b', 'x' => 'c']);
        $keys = [];
        foreach ($this->cache->getMultiple(['123', '7', 'x', '0']) as $k => $v) {
            $keys[] = [$k, $v];
        }
        $this->assertSame([['123', 'a'], ['7', 'b'], ['x', 'c'], ['0', null]], $keys);
        $this->assertSame('a', $this->c->get('p16:123'), 'stored under the string key');

        $this->pool->save($this->pool->getItem('123')->set('A'));
        $this->pool->saveDeferred($this->pool->getItem('42')->set('D'));
        $got = [];
        foreach ($this->pool->getItems(['123', '42', '9']) as $k => $item) {
            $got[] = [$k, $item->getKey(), $item->isHit() ? $item->get() : null];
        }
        $this->assertSame([['123', '123', 'A'], ['42', '42', 'D'], ['9', '9', null]], $got);
        $this->assertTrue($this->pool->commit(), 'a deferred numeric key commits');
        $this->assertSame('D', $this->c->get('p6:42'));
        $this->assertSame('123', $this->pool->getItem('123')->getKey());
    }
}
