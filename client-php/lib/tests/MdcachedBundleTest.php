<?php
use Mdcached\Cache\SymfonyTagAwareAdapter;
use PHPUnit\Framework\TestCase;
use Symfony\Contracts\Cache\ItemInterface;
use Symfony\Contracts\Cache\TagAwareCacheInterface;

/**
 * MdcachedBundle with Debian's FrameworkBundle 5.4: a kernel whose only
 * mdcached configuration is each framework.cache pool's one line
 * (adapter: cache.adapter.mdcached, provider: 'mdcached://...'), booted,
 * the pools taken from the container.  Without the bundle FrameworkBundle
 * stops at that provider with "Unsupported DSN".
 * @group framework-bundle
 */
final class MdcachedBundleTest extends TestCase
{
    private static string $dir;

    public static function setUpBeforeClass(): void
    {
        require_once __DIR__ . '/fixtures/BundleKernel.php';
        self::$dir = sys_get_temp_dir() . '/mdc-bundle-' . getmypid();
    }

    public static function tearDownAfterClass(): void
    {
        if (is_dir(self::$dir)) {
            $it = new RecursiveIteratorIterator(new RecursiveDirectoryIterator(self::$dir, FilesystemIterator::SKIP_DOTS),
                                                RecursiveIteratorIterator::CHILD_FIRST);
            foreach ($it as $f) {
                $f->isDir() ? rmdir($f->getPathname()) : unlink($f->getPathname());
            }
            rmdir(self::$dir);
        }
    }

    private function boot(string $yaml, array $expose): MdcBundleKernel
    {
        @mkdir(self::$dir, 0777, true);
        $file = self::$dir . '/cache-' . md5($yaml) . '.yaml';
        file_put_contents($file, $yaml);
        $kernel = new MdcBundleKernel(self::$dir . '/' . md5($yaml), $file, $expose);
        $kernel->boot();
        return $kernel;
    }

    public function testOneLinePoolsWithADsn(): void
    {
        $c = mdc_test_client();
        $c->flush();
        $port = (int)getenv('MDC_TEST_PORT');
        $sock = getenv('MDC_TEST_SOCK');
        $_SERVER['MDC_BUNDLE_DSN'] = $_ENV['MDC_BUNDLE_DSN'] = "mdcached://$sock";
        $yaml = <<<YAML
            parameters:
                mdcached.default_dsn: 'mdcached://127.0.0.1:$port'
            framework:
                cache:
                    app: cache.adapter.mdcached
                    pools:
                        app.tagged:
                            adapter: cache.adapter.mdcached
                            provider: 'mdcached://127.0.0.1:$port'
                        app.env:
                            adapter: cache.adapter.mdcached
                            provider: '%env(MDC_BUNDLE_DSN)%'
                        app.stale:
                            adapter: cache.adapter.mdcached_stale
                            provider: 'mdcached://127.0.0.1:$port'
                        app.wrapped:
                            adapter: cache.adapter.mdcached
                            provider: 'mdcached://127.0.0.1:$port'
                            tags: true
                        app.default:
                            adapter: cache.adapter.mdcached
                            default_lifetime: 1

            YAML;
        $kernel = $this->boot($yaml, [
            'test.app.tagged' => 'app.tagged', 'test.app.env' => 'app.env', 'test.app.stale' => 'app.stale',
            'test.app.wrapped' => 'app.wrapped', 'test.app.default' => 'app.default', 'test.cache.app' => 'cache.app',
            'test.autowired' => TagAwareCacheInterface::class . ' $appTagged',
            'test.cache.app.taggable' => 'cache.app.taggable',
        ]);
        $container = $kernel->getContainer();

        $pool = $container->get('test.app.tagged');
        $this->assertInstanceOf(SymfonyTagAwareAdapter::class, $pool);
        $calls = 0;
        $compute = function (ItemInterface $item) use (&$calls) {
            $item->tag(['article-1']);
            return ++$calls;
        };
        $this->assertSame(1, $pool->get('page', $compute));
        $this->assertSame(1, $pool->get('page', $compute));
        $this->assertTrue($pool->invalidateTags(['article-1']));
        $this->assertSame(2, $pool->get('page', $compute));
        $this->assertSame(1, mdc_stat($c, 'tagged_items') > 0 ? 1 : 0, 'the records are on the DSN\'s server');

        // a DSN from the environment (a Unix socket here), same server
        $env = $container->get('test.app.env');
        $this->assertInstanceOf(SymfonyTagAwareAdapter::class, $env);
        $env->save($env->getItem('e')->set('E')->tag('t'));
        $this->assertSame('E', $env->getItem('e')->get());
        $this->assertNotSame($pool->getItem('e')->isHit(), true, 'each pool its own namespace');

        // the stale option
        $stale = $container->get('test.app.stale');
        $this->assertInstanceOf(SymfonyTagAwareAdapter::class, $stale);
        $this->assertTrue((new ReflectionProperty(SymfonyTagAwareAdapter::class, 'stale'))->getValue($stale));
        $this->assertFalse((new ReflectionProperty(SymfonyTagAwareAdapter::class, 'stale'))->getValue($pool));
        $this->assertSame('old', $stale->get('s', function (ItemInterface $i) { $i->tag('st'); return 'old'; }));
        $this->assertTrue($stale->invalidateTags(['st']));
        $this->assertSame('old', $stale->getItem('s')->get(), 'marked stale, still readable');
        $this->assertSame('new', $stale->get('s', fn() => 'new'), 'the winner recomputes');

        // tag-aware pools are the adapter itself, never Symfony's TagAwareAdapter around it
        $this->assertInstanceOf(SymfonyTagAwareAdapter::class, $container->get('test.app.wrapped'), 'tags: true');
        $this->assertSame($pool, $container->get('test.autowired'), 'TagAwareCacheInterface $appTagged');
        $this->assertSame($container->get('test.cache.app'), $container->get('test.cache.app.taggable'));

        // no provider: the default connection (parameter mdcached.default_dsn); default_lifetime
        $default = $container->get('test.app.default');
        $default->save($default->getItem('d')->set(1));
        $this->assertTrue($default->hasItem('d'));
        // the pool clearer clears one pool
        $this->assertTrue($container->get('cache.global_clearer')->clearPool('app.tagged'));
        $this->assertFalse($pool->hasItem('page'));
        $this->assertTrue($env->hasItem('e'));
        mdc_sleep_past_ttl(1);
        $this->assertFalse($default->hasItem('d'), 'default_lifetime 1');
        $kernel->shutdown();
    }

    public function testTheDocumentShowsTheOneLineConfiguration(): void
    {
        $doc = file_get_contents(__DIR__ . '/../../../docs/client-php.md');
        foreach (["adapter: cache.adapter.mdcached\n", "provider: 'mdcached://127.0.0.1:11311'",
                  'adapter: cache.adapter.mdcached_stale', "provider: '%env(MDCACHED_DSN)%'",
                  'Mdcached\\Cache\\MdcachedBundle::class => [\'all\' => true]'] as $s) {
            $this->assertStringContainsString($s, $doc);
        }
    }
}
