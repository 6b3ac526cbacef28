<?php
namespace Mdcached\Cache;

use Mdcached\Client;

/**
 * A Mdcached\Client from a DSN (docs/client-php.md, "DSN"):
 *
 *   mdcached://host[:port]                  port 11311 by default
 *   mdcached://[::1]:11311                  IPv6 in brackets
 *   mdcached:///run/mdcached.sock           a Unix socket: the path, no host
 *   mdcached://user:pass@host:port          credentials (setSaslAuthData)
 *   mdcached:?host[h1:11311]&host[h2:11312]=2&host[/run/mdcached.sock]
 *                                           several servers (=weight)
 *   [dsn, dsn, ...]                         several servers
 *
 * Options, in the query or in $options (which win): persistent_id, user,
 * password, weight, tls (1: TLS with the system's CAs), tls_ca_file,
 * tls_ca_path, tls_cert_file, tls_key_file, tls_server_name, tls_insecure
 * (any tls_* implies tls), and the Client's OPT_* options by their lower-case
 * name without OPT_ (connect_timeout=500, serializer=igbinary, ...).
 * Anything else is an InvalidArgumentException naming it; a password never
 * appears in a message.
 */
final class Dsn
{
    private const TLS = ['ca_file', 'ca_path', 'cert_file', 'key_file', 'server_name', 'insecure'];

    /** @param string|string[] $dsn */
    public static function createClient(string|array $dsn, array $options = []): Client
    {
        if (!extension_loaded('mdcached')) {
            class_exists(Client::class); // ext-check/Client.php: the clear message
        }
        $dsns = is_array($dsn) ? array_values($dsn) : [$dsn];
        if (!$dsns) {
            throw new InvalidArgumentException('mdcached DSN: no server given');
        }
        $servers = [];
        $opts = [];
        foreach ($dsns as $d) {
            if (!is_string($d)) {
                throw new InvalidArgumentException('mdcached DSN: each DSN must be a string, ' . get_debug_type($d) . ' given');
            }
            [$s, $o] = self::parse($d);
            array_push($servers, ...$s);
            $opts = $o + $opts;
        }
        $opts = $options + $opts;
        return self::build($servers, $opts);
    }

    /** @return array{0: array<array{0: string, 1: int, 2: int}>, 1: array} servers and options */
    public static function parse(string $dsn): array
    {
        if (!preg_match('#^mdcached:(?://(?:([^@/?]*)@)?([^/?]*)([^?]*))?(?:\?(.*))?$#s', $dsn, $m)) {
            throw new InvalidArgumentException('mdcached DSN must start with "mdcached:": ' . self::redact($dsn));
        }
        $user = $m[1] ?? '';
        $authority = $m[2] ?? '';
        $path = $m[3] ?? '';
        $q = [];
        if (($m[4] ?? '') !== '') {
            parse_str($m[4], $q);
        }
        $opts = [];
        if ($user !== '') {
            $i = strpos($user, ':');
            $opts['user'] = rawurldecode($i === false ? $user : substr($user, 0, $i));
            if ($i !== false) {
                $opts['password'] = rawurldecode(substr($user, $i + 1));
            }
        }
        $weight = isset($q['weight']) ? self::int('weight', $q['weight']) : 0;
        unset($q['weight']);
        $servers = [];
        if ($authority !== '') {
            if ($path !== '' && $path !== '/') {
                throw new InvalidArgumentException("mdcached DSN: a path (\"$path\") after a host; a Unix socket is mdcached:///path/to.sock");
            }
            $servers[] = self::server(rawurldecode($authority), $weight);
        } elseif ($path !== '' && $path !== '/') {
            $servers[] = [rawurldecode($path), 0, $weight];
        }
        if (isset($q['host'])) {
            if (!is_array($q['host'])) {
                throw new InvalidArgumentException('mdcached DSN: write several servers as host[h1:port]&host[h2:port]=weight');
            }
            foreach ($q['host'] as $h => $w) {
                $servers[] = self::server((string)$h, $w === '' ? 0 : self::int("host[$h]", $w));
            }
            unset($q['host']);
        }
        if (!$servers) {
            throw new InvalidArgumentException('mdcached DSN names no server: ' . self::redact($dsn));
        }
        return [$servers, $q + $opts];
    }

    /** "host", "host:port", "[v6]:port", "/path.sock": [host, port, weight] */
    private static function server(string $s, int $weight): array
    {
        if ($s === '') {
            throw new InvalidArgumentException('mdcached DSN: empty host');
        }
        if ($s[0] === '/') {
            return [$s, 0, $weight];
        }
        if ($s[0] === '[') {
            $e = strpos($s, ']');
            if ($e === false) {
                throw new InvalidArgumentException("mdcached DSN: unclosed [ in \"$s\"");
            }
            $host = substr($s, 1, $e - 1);
            $rest = substr($s, $e + 1);
            if ($rest !== '' && $rest[0] !== ':') {
                throw new InvalidArgumentException("mdcached DSN: bad server \"$s\"");
            }
            $port = $rest === '' ? '' : substr($rest, 1);
        } elseif (substr_count($s, ':') === 1) {
            [$host, $port] = explode(':', $s);
        } elseif (substr_count($s, ':') > 1) {
            throw new InvalidArgumentException("mdcached DSN: an IPv6 address goes in brackets: [$s]");
        } else {
            [$host, $port] = [$s, ''];
        }
        if ($host === '') {
            throw new InvalidArgumentException("mdcached DSN: empty host in \"$s\"");
        }
        $p = $port === '' ? 11311 : self::int('port', $port);
        if ($p < 1 || $p > 65535) {
            throw new InvalidArgumentException("mdcached DSN: port $port out of range");
        }
        return [$host, $p, $weight];
    }

    private static function int(string $what, $v): int
    {
        if (is_int($v) || (is_string($v) && preg_match('/^[0-9]+$/', $v))) {
            return (int)$v;
        }
        throw new InvalidArgumentException("mdcached DSN: $what must be a non-negative integer");
    }

    private static function bool(string $what, $v): bool
    {
        if (is_bool($v)) {
            return $v;
        }
        $b = filter_var($v, FILTER_VALIDATE_BOOLEAN, FILTER_NULL_ON_FAILURE);
        if ($b === null) {
            throw new InvalidArgumentException("mdcached DSN: $what must be a boolean (1, 0, true, false)");
        }
        return $b;
    }

    /**
     * "250" is 250, "true" true; a name is the Client constant it ends:
     * serializer=igbinary is SERIALIZER_IGBINARY, compression_type=zstd
     * COMPRESSION_ZSTD; any other string stays one (prefix=app:).
     */
    private static function optionValue(string $name, string $v)
    {
        if (preg_match('/^-?[0-9]+$/', $v)) {
            return (int)$v;
        }
        if (preg_match('/^[A-Za-z0-9_]+$/', $v)) {
            $first = strtok($name, '_');
            foreach (["{$name}_$v", "{$first}_$v", $v] as $k) {
                if (defined($c = Client::class . '::' . strtoupper($k))) {
                    return constant($c);
                }
            }
        }
        return filter_var($v, FILTER_VALIDATE_BOOLEAN, FILTER_NULL_ON_FAILURE) ?? $v;
    }

    private static function redact(string $dsn): string
    {
        return preg_replace('#^(mdcached://[^:@/?]*):[^@/?]*@#', '$1:****@', $dsn);
    }

    private static function build(array $servers, array $opts): Client
    {
        $pid = $opts['persistent_id'] ?? null;
        unset($opts['persistent_id']);
        if ($pid !== null && (!is_string($pid) || $pid === '')) {
            throw new InvalidArgumentException('mdcached DSN: persistent_id must be a non-empty string');
        }
        $user = $opts['user'] ?? null;
        $password = $opts['password'] ?? null;
        unset($opts['user'], $opts['password']);
        $tls = null;
        if (isset($opts['tls'])) {
            $tls = self::bool('tls', $opts['tls']) ? [] : null;
            unset($opts['tls']);
        }
        foreach (self::TLS as $t) {
            if (isset($opts["tls_$t"])) {
                $tls ??= [];
                $tls[$t] = $t === 'insecure' ? self::bool("tls_$t", $opts["tls_$t"]) : (string)$opts["tls_$t"];
                unset($opts["tls_$t"]);
            }
        }
        $clientOpts = [];
        foreach ($opts as $name => $v) {
            $c = Client::class . '::OPT_' . strtoupper((string)$name);
            if (!is_string($name) || !defined($c)) {
                throw new InvalidArgumentException("mdcached DSN: unknown option \"$name\"");
            }
            if (is_string($v)) {
                $v = self::optionValue($name, $v);
            }
            $clientOpts[constant($c)] = $v;
        }

        $client = new Client($pid);
        if ($clientOpts && !$client->setOptions($clientOpts)) {
            throw new InvalidArgumentException('mdcached DSN: bad option value: ' . $client->getResultMessage());
        }
        if ($user !== null || $password !== null) {
            if (!$client->setSaslAuthData((string)$user, (string)$password)) {
                throw new InvalidArgumentException('mdcached DSN: bad credentials: ' . $client->getResultMessage());
            }
        }
        if ($tls !== null && !$client->setTls($tls)) {
            throw new InvalidArgumentException('mdcached DSN: TLS options: ' . $client->getResultMessage());
        }
        foreach ($servers as [$host, $port, $weight]) {
            // a persistent client already holding the server keeps it once
            if (!$client->addServer($host, $port, $weight)) {
                throw new InvalidArgumentException("mdcached DSN: cannot add server $host:$port: " . $client->getResultMessage());
            }
        }
        return $client;
    }
}
