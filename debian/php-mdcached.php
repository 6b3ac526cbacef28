mod debian/php/mdcached.ini
