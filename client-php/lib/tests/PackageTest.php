<?php
use PHPUnit\Framework\TestCase;

/**
 * The package as installed elsewhere: the classes load against the PSR
 * interfaces of psr/cache and psr/simple-cache 1.0, 2.0 and 3.0 (written
 * here as data: 2.0 is 3.0's parameter types with 1.0's untyped returns),
 * each in a PHP of its own; and without the extension, loading says so.
 */
final class PackageTest extends TestCase
{
    /** psr 3.0: interface => [method => [parameters, return type]] */
    private const PSR3 = [
        'Psr\Cache\CacheItemInterface' => [
            'getKey' => ['', 'string'], 'get' => ['', 'mixed'], 'isHit' => ['', 'bool'],
            'set' => ['mixed $value', 'static'],
            'expiresAt' => ['?\DateTimeInterface $expiration', 'static'],
            'expiresAfter' => ['int|\DateInterval|null $time', 'static'],
        ],
        'Psr\Cache\CacheItemPoolInterface' => [
            'getItem' => ['string $key', 'CacheItemInterface'], 'getItems' => ['array $keys = []', 'iterable'],
            'hasItem' => ['string $key', 'bool'], 'clear' => ['', 'bool'], 'deleteItem' => ['string $key', 'bool'],
            'deleteItems' => ['array $keys', 'bool'], 'save' => ['CacheItemInterface $item', 'bool'],
            'saveDeferred' => ['CacheItemInterface $item', 'bool'], 'commit' => ['', 'bool'],
        ],
        'Psr\SimpleCache\CacheInterface' => [
            'get' => ['string $key, mixed $default = null', 'mixed'],
            'set' => ['string $key, mixed $value, null|int|\DateInterval $ttl = null', 'bool'],
            'delete' => ['string $key', 'bool'], 'clear' => ['', 'bool'],
            'getMultiple' => ['iterable $keys, mixed $default = null', 'iterable'],
            'setMultiple' => ['iterable $values, null|int|\DateInterval $ttl = null', 'bool'],
            'deleteMultiple' => ['iterable $keys', 'bool'], 'has' => ['string $key', 'bool'],
        ],
    ];

    /** PHP source of the PSR interfaces of $version (1, 2 or 3) */
    private static function psrSource(int $version): string
    {
        $src = '';
        foreach (['Psr\Cache', 'Psr\SimpleCache'] as $ns) {
            $throwable = $version >= 2 ? ' extends \Throwable' : '';
            $src .= "namespace $ns { interface CacheException$throwable {}\n"
                  . "interface InvalidArgumentException extends CacheException {}\n";
            foreach (self::PSR3 as $iface => $methods) {
                if (strncmp($iface, "$ns\\", strlen($ns) + 1) !== 0) {
                    continue;
                }
                $src .= 'interface ' . substr($iface, strlen($ns) + 1) . " {\n";
                foreach ($methods as $m => [$params, $ret]) {
                    if ($version === 1) { // PHP 5's types only: array and classes
                        $params = preg_replace('/(^|, )(?!array |CacheItemInterface )[^$,]+ (\$)/', '$1$2', $params);
                    }
                    $src .= "public function $m($params)" . ($version === 3 ? ": $ret" : '') . ";\n";
                }
                $src .= "}\n";
            }
            $src .= "}\n";
        }
        return $src;
    }

    private static function php(string $code, bool $withExtension): array
    {
        $f = tempnam(sys_get_temp_dir(), 'mdcpkg');
        file_put_contents($f, "<?php\n$code");
        $cmd = [PHP_BINARY, '-n'];
        if ($withExtension) {
            array_push($cmd, '-d', 'extension=' . getenv('MDC_TEST_EXT'));
        }
        $cmd[] = $f;
        $p = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes);
        $out = stream_get_contents($pipes[1]);
        $rc = proc_close($p);
        unlink($f);
        return [$rc, $out];
    }

    /** An autoloader as Composer's, from composer.json's PSR-4 map. */
    private static function psr4Loader(): string
    {
        $dir = var_export(dirname(__DIR__), true);
        return <<<PHP
        namespace {
            \$composer = json_decode(file_get_contents($dir . '/composer.json'), true);
            foreach (\$composer['autoload']['psr-4'] as \$prefix => \$d) {
                spl_autoload_register(function (\$class) use (\$prefix, \$d) {
                    if (strncmp(\$class, \$prefix, strlen(\$prefix)) === 0) {
                        \$f = $dir . '/' . \$d . str_replace('\\\\', '/', substr(\$class, strlen(\$prefix))) . '.php';
                        if (is_file(\$f)) { require \$f; }
                    }
                });
            }
        }
        PHP;
    }

    public function testPsrInterfaceData(): void
    {
        // the data above is 3.0 itself where the set has 3.0 loaded
        $r = new ReflectionClass(Psr\SimpleCache\CacheInterface::class);
        if ((string)$r->getMethod('get')->getReturnType() !== 'mixed') {
            $this->assertNull($r->getMethod('get')->getReturnType(), 'psr/simple-cache 1.0');
            return;
        }
        foreach (self::PSR3 as $iface => $methods) {
            foreach ($methods as $m => [$params, $ret]) {
                $rm = new ReflectionMethod($iface, $m);
                $this->assertSame(ltrim($ret, '\\'), ltrim(str_replace(['Psr\Cache\\'], '', (string)$rm->getReturnType()), '\\'), "$iface::$m");
                $types = array_map(fn($p) => (string)$p->getType(), $rm->getParameters());
                preg_match_all('/([^$, ]+) \$/', $params, $mm);
                $norm = function ($t) {
                    $parts = explode('|', str_replace('?', 'null|', $t));
                    $parts = array_map(fn($p) => preg_replace('/^Psr\\\\Cache\\\\/', '', ltrim($p, '\\')), $parts);
                    sort($parts);
                    return implode('|', $parts);
                };
                $this->assertSame(array_map($norm, $mm[1]), array_map($norm, $types), "$iface::$m parameters");
            }
        }
    }

    /** @return array<string, array{int}> */
    public static function psrVersions(): array
    {
        return ['psr 1.0' => [1], 'psr 2.0' => [2], 'psr 3.0' => [3]];
    }

    /** @dataProvider psrVersions */
    public function testClassesLoadOnPsr(int $version): void
    {
        $code = self::psrSource($version) . self::psr4Loader() . '
            namespace {
                foreach (["CacheItem", "CacheItemPool", "SimpleCache", "InvalidArgumentException", "CacheException"] as $c) {
                    if (!class_exists("Mdcached\\\\Cache\\\\$c")) { echo "missing $c\n"; exit(1); }
                }
                $p = new Mdcached\Cache\SimpleCache(new Mdcached\Client());
                $i = new Mdcached\Cache\CacheItem("k");
                echo get_class($i->set(1)->expiresAfter(5)), " ok\n";
            }';
        [$rc, $out] = self::php($code, true);
        $this->assertSame([0, "Mdcached\\Cache\\CacheItem ok\n"], [$rc, $out], "psr $version.0");
    }

    public function testWithoutTheExtensionTheMessageSaysSo(): void
    {
        $lib = var_export(dirname(__DIR__), true);
        foreach (['composer PSR-4' => self::psr4Loader(), 'autoload.php' => "namespace { require $lib . '/autoload.php'; }"] as $how => $loader) {
            foreach (['new Mdcached\Client()', 'Mdcached\Cache\Dsn::createClient("mdcached://127.0.0.1")',
                      'Mdcached\Client::RES_SUCCESS'] as $use) {
                [$rc, $out] = self::php("$loader\nnamespace { try { $use; echo \"loaded\\n\"; }
                    catch (LogicException \$e) { echo \$e->getMessage(), \"\\n\"; } }", false);
                $this->assertSame(0, $rc, "$how, $use: $out");
                $this->assertStringContainsString('needs the mdcached PHP extension (ext-mdcached)', $out, "$how, $use");
                $this->assertStringContainsString('extension=mdcached', $out, "$how, $use");
                // only commands that work (client-php/tests/packaging.sh runs them)
                $this->assertStringContainsString('sh client-php/pecl-package.sh && pecl install mdcached-*.tgz', $out);
                $this->assertFileExists(dirname(__DIR__, 2) . '/pecl-package.sh');
                foreach (['pie install mdcached/mdcached', 'pecl install mdcached,', 'apt install php-mdcached'] as $bad) {
                    $this->assertStringNotContainsString($bad, $out, 'no registry or apt source holds it');
                }
            }
        }
    }
}
