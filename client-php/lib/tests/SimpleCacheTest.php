<?php
use Mdcached\Cache\InvalidArgumentException;
use Mdcached\Cache\SimpleCache;
use PHPUnit\Framework\TestCase;

final class SimpleCacheTest extends TestCase
{
    private Mdcached\Client $c;
    private SimpleCache $cache;

    protected function setUp(): void
    {
        $this->c = mdc_test_client();
        $this->c->flush();
        $this->cache = new SimpleCache($this->c, 'app');
    }

    public function testGetSetHasDelete(): void
    {
        $this->assertSame('d', $this->cache->get('k', 'd'));
        $this->assertFalse($this->cache->has('k'));
        $this->assertTrue($this->cache->set('k', ['v' => 1]));
        $this->assertSame(['v' => 1], $this->cache->get('k'));
        $this->assertTrue($this->cache->has('k'));
        $this->assertSame(['v' => 1], $this->c->get('app:k'), 'namespaced on the server');
        $this->assertTrue($this->cache->delete('k'));
        $this->assertTrue($this->cache->delete('k'), 'deleting a missing key is a success');
        $this->assertNull($this->cache->get('k'));
    }

    public function testFalseAndNullAreValues(): void
    {
        $this->cache->set('f', false);
        $this->cache->set('n', null);
        $this->assertFalse($this->cache->get('f', 'default'));
        $this->assertNull($this->cache->get('n', 'default'));
        $this->assertTrue($this->cache->has('f'));
    }

    public static function reservedKeys(): array
    {
        $keys = [];
        foreach (str_split('{}()/\\@:') as $ch) {
            $keys[$ch] = ["a{$ch}b"];
        }
        $keys['empty'] = [''];
        return $keys;
    }

    /** @dataProvider reservedKeys */
    public function testReservedCharactersRejected(string $key): void
    {
        foreach (['get' => [$key], 'set' => [$key, 1], 'has' => [$key], 'delete' => [$key],
                  'getMultiple' => [[$key]], 'setMultiple' => [[$key => 1]], 'deleteMultiple' => [['ok', $key]]] as $m => $args) {
            try {
                $this->cache->$m(...$args);
                $this->fail("$m accepted the key \"$key\"");
            } catch (InvalidArgumentException $e) {
                $this->assertInstanceOf(\Psr\SimpleCache\InvalidArgumentException::class, $e);
            }
        }
        $this->assertTrue($this->cache->has('ok') === false);
    }

    public function testNonStringKeysRejected(): void
    {
        $this->expectException(\Psr\SimpleCache\InvalidArgumentException::class);
        $this->cache->get(new stdClass());
    }

    public function testTtlIntAndDateInterval(): void
    {
        $this->assertTrue($this->cache->set('i', 1, 100));
        $this->assertTrue($this->cache->set('d', 2, new DateInterval('PT1H')));
        $this->assertTrue($this->cache->set('short', 3, 1));
        $this->assertTrue($this->cache->set('shortdi', 4, new DateInterval('PT1S')));
        $e = $this->c->get('app:d', null, Mdcached\Client::GET_EXTENDED);
        $this->assertSame(2, $e['value']);
        mdc_sleep_past_ttl(1);
        $this->assertSame(1, $this->cache->get('i'));
        $this->assertSame(2, $this->cache->get('d'));
        $this->assertNull($this->cache->get('short'), 'int TTL expired');
        $this->assertNull($this->cache->get('shortdi'), 'DateInterval TTL expired');
    }

    public function testZeroOrNegativeTtlDeletes(): void
    {
        $this->cache->set('z', 1);
        $this->assertTrue($this->cache->set('z', 2, 0));
        $this->assertFalse($this->cache->has('z'));
        $this->cache->set('n', 1);
        $this->assertTrue($this->cache->set('n', 2, -5));
        $this->assertFalse($this->cache->has('n'));
        $this->cache->setMultiple(['a' => 1, 'b' => 2]);
        $this->cache->setMultiple(['a' => 1], new DateInterval('PT0S'));
        $this->assertSame(['a' => null, 'b' => 2], iterator_to_array($this->cache->getMultiple(['a', 'b'])));
    }

    public function testBadTtlRejected(): void
    {
        $this->expectException(\Psr\SimpleCache\InvalidArgumentException::class);
        $this->cache->set('k', 1, 'soon');
    }

    public function testMultiple(): void
    {
        $this->assertTrue($this->cache->setMultiple(['a' => 1, 'b' => [2], 'c' => 'three'], 60));
        $this->assertSame(['a' => 1, 'x' => 'dflt', 'c' => 'three'], iterator_to_array($this->cache->getMultiple(['a', 'x', 'c'], 'dflt')));
        $gen = (function () { yield 'a'; yield 'b'; })();
        $this->assertSame(['a' => 1, 'b' => [2]], iterator_to_array($this->cache->getMultiple($gen)));
        $this->assertTrue($this->cache->deleteMultiple(['a', 'b', 'nope']));
        $this->assertSame(['a' => null, 'b' => null, 'c' => 'three'], iterator_to_array($this->cache->getMultiple(['a', 'b', 'c'])));
        $this->assertTrue($this->cache->setMultiple(new ArrayIterator(['i1' => 1, 'i2' => 2])));
        $this->assertSame(2, $this->cache->get('i2'));
        $this->assertSame([], iterator_to_array($this->cache->getMultiple([])));
    }

    public function testClearOnlyThisNamespace(): void
    {
        $other = new SimpleCache($this->c, 'other');
        $this->cache->set('k1', 1);
        $this->cache->set('k2', 2);
        $other->set('k1', 'o');
        $this->c->set('raw', 'untouched');
        $this->assertTrue($this->cache->clear());
        $this->assertNull($this->cache->get('k1'));
        $this->assertNull($this->cache->get('k2'));
        $this->assertSame('o', $other->get('k1'));
        $this->assertSame('untouched', $this->c->get('raw'));
    }

    public function testServerFailureIsCacheException(): void
    {
        $dead = new Mdcached\Client();
        $s = stream_socket_server('tcp://127.0.0.1:0');
        $port = (int)substr(strrchr(stream_socket_get_name($s, false), ':'), 1);
        fclose($s);
        $dead->addServer('127.0.0.1', $port);
        $cache = new SimpleCache($dead);
        $this->assertFalse($cache->set('k', 1));
        $this->expectException(\Psr\SimpleCache\CacheException::class);
        $cache->get('k');
    }
}
