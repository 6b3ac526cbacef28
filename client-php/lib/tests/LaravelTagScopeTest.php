<?php
use Illuminate\Cache\ArrayStore;
use Illuminate\Cache\MemcachedStore;
use Illuminate\Cache\Repository;
use Mdcached\Cache\LaravelStore;
use PHPUnit\Framework\TestCase;

/**
 * Laravel's tag contract, with Laravel's memcached store as the reference:
 * the same script of tagged operations runs on Laravel's MemcachedStore (a
 * memcached started here, php-memcached) and on the mdcached store, and
 * every answer must be the same.  An item stored through tags([...]) is
 * found only through the same tags in the same order; a tagged flush()
 * drops what was written through those tags.  Without memcached or
 * php-memcached the reference is Laravel's ArrayStore (the same
 * TaggedCache and TagSet code).
 *
 * @group laravel
 */
final class LaravelTagScopeTest extends TestCase
{
    /** @var resource|null */
    private static $memcached = null;
    private static string $sock = '';

    public static function setUpBeforeClass(): void
    {
        $bin = trim((string)shell_exec('command -v memcached 2>/dev/null'));
        if ($bin === '' || !class_exists(Memcached::class) || !class_exists(MemcachedStore::class)) {
            return;
        }
        self::$sock = sys_get_temp_dir() . '/mdc-lv-memcached-' . getmypid() . '.sock';
        $cmd = [$bin, '-s', self::$sock, '-U', '0', '-m', '16'];
        if (function_exists('posix_getuid') ? posix_getuid() === 0 : trim((string)shell_exec('id -u')) === '0') {
            array_push($cmd, '-u', 'root');
        }
        self::$memcached = proc_open($cmd, [], $pipes);
        for ($i = 0; $i < 100 && !file_exists(self::$sock); $i++) {
            usleep(20000);
        }
    }

    public static function tearDownAfterClass(): void
    {
        if (self::$memcached !== null) {
            proc_terminate(self::$memcached);
            proc_close(self::$memcached);
            @unlink(self::$sock);
            self::$memcached = null;
        }
    }

    private function reference(): Repository
    {
        if (self::$memcached !== null && file_exists(self::$sock)) {
            $m = new Memcached();
            $m->addServer(self::$sock, 0);
            // a daemon of its own, no flush: memcached's flush_all also
            // drops records written later within the same second
            return new Repository(new MemcachedStore($m, 'lv' . bin2hex(random_bytes(4))));
        }
        fwrite(STDERR, "LaravelTagScopeTest: no memcached/php-memcached, reference is ArrayStore\n");
        return new Repository(new ArrayStore());
    }

    private function mdcached(): Repository
    {
        $c = mdc_test_client();
        $c->flush();
        return new Repository(new LaravelStore($c, 'lv'));
    }

    /** @return array<string, mixed> what the script observes, by step */
    private function script(Repository $r): array
    {
        $o = [];
        $t1 = $r->tags(['tenant:1']);
        $t2 = $r->tags(['tenant:2']);
        $ab = $r->tags(['a', 'b']);
        $ba = $r->tags(['b', 'a']);
        $o['put'] = $t1->put('settings', 's1', 60);
        $o['same tag'] = $t1->get('settings');
        $o['other tag'] = $t2->get('settings');
        $o['no tag'] = $r->get('settings');
        $o['has'] = [$t1->has('settings'), $t2->has('settings'), $r->has('settings')];
        $t2->put('settings', 's2', 60);
        $r->put('settings', 's0', 60);
        $o['three records'] = [$t1->get('settings'), $t2->get('settings'), $r->get('settings')];
        $ab->put('k', 'AB', 60);
        $o['order'] = [$ab->get('k'), $ba->get('k'), $r->tags(['a'])->get('k'), $r->tags('a', 'b')->get('k')];
        $o['remember'] = [$ab->remember('r', 60, fn() => 'R1'), $ab->remember('r', 60, fn() => 'R2'),
                          $ba->remember('r', 60, fn() => 'R3'), $r->remember('r', 60, fn() => 'R4')];
        $o['rememberForever'] = [$ab->rememberForever('rf', fn() => 'F1'), $ab->rememberForever('rf', fn() => 'F2')];
        $o['add'] = [$ab->add('ad', 1, 60), $ab->add('ad', 2, 60), $ba->add('ad', 3, 60), $ab->get('ad')];
        $ab->put('c', 1, 60);
        $o['counter'] = [$ab->increment('c', 2), $ab->decrement('c'), $ab->get('c'), $ba->get('c')];
        $o['forever'] = [$ab->forever('f', 'F'), $ab->get('f'), $ba->get('f'), $r->get('f')];
        $o['pull'] = [$ab->pull('k'), $ab->get('k')];
        $o['forget'] = [$ab->forget('f'), $ab->get('f')];
        $o['putMany'] = $ab->putMany(['m1' => 1, 'm2' => 2], 60);
        $o['many'] = [$ab->many(['m1', 'm2', 'mx']), $r->many(['m1'])];
        $o['lock'] = [$ab->lock('L', 10)->get(fn() => 'locked'), $r->lock('L', 10)->get(fn() => 'again')];
        if (method_exists(Repository::class, 'flexible')) {
            $o['flexible'] = [$ab->flexible('fx', [60, 120], fn() => 'X1'), $ab->flexible('fx', [60, 120], fn() => 'X2')];
        }
        // flushes: the tag's items go, others stay
        $t1->flush();
        $o['flush tenant:1'] = [$t1->get('settings'), $t2->get('settings'), $r->get('settings'), $ab->get('r')];
        $r->tags(['a'])->flush();
        $o['flush a'] = [$ab->get('r'), $ba->get('r'), $ab->get('ad'), $ab->get('rf'), $r->get('r'),
                         $t2->get('settings'), $ab->many(['m1', 'm2'])];
        $o['after flush'] = [$ab->remember('r', 60, fn() => 'R5'), $ab->get('r')];
        return $o;
    }

    public function testTaggedItemsAreScopedAsOnLaravelsMemcachedStore(): void
    {
        $want = $this->script($this->reference());
        $got = $this->script($this->mdcached());
        $this->assertSame($want, $got);
        // the contract itself, whatever the reference
        $this->assertSame('s1', $got['same tag']);
        $this->assertNull($got['other tag'], 'tenant:2 does not read tenant:1\'s item');
        $this->assertNull($got['no tag'], 'nor does an untagged read');
        $this->assertSame(['AB', null, null, 'AB'], $got['order']);
        $this->assertSame([null, 's2', 's0', 'R1'], $got['flush tenant:1']);
    }

    /** A tagged flush stays one server-side tag delete, with scoped keys. */
    public function testTaggedFlushIsOneTagDelete(): void
    {
        $r = $this->mdcached();
        $store = $r->getStore();
        $c = $store->getClient();
        for ($i = 0; $i < 20; $i++) {
            $r->tags(['tenant:1', 'x'])->put("k$i", $i, 60);
        }
        $s0 = array_values($c->getStats())[0];
        $this->assertTrue($r->tags(['tenant:1'])->flush());
        $s1 = array_values($c->getStats())[0];
        $this->assertSame(1, $s1['cmd_del_by_tag'] - $s0['cmd_del_by_tag']);
        $this->assertSame(0, $s1['cmd_get'] - $s0['cmd_get'], 'nothing read');
        $this->assertSame(0, $s1['cmd_set'] - $s0['cmd_set'], 'nothing written');
        $this->assertNull($r->tags(['tenant:1', 'x'])->get('k3'));
    }
}
