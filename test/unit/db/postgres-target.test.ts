import { describe, expect, test } from 'vitest';
import { postgresTarget } from '../../../lib/db/client';

describe('postgresTarget: a DATABASE_URL naming a Unix socket directory (libpq host parameter)', () => {
  test('a host parameter that is a directory becomes the host option, the other parameters stay', () => {
    expect(postgresTarget('postgres://fb@localhost/fieldbase?host=/var/run/postgresql')).toEqual({ url: 'postgres://fb@localhost/fieldbase', host: '/var/run/postgresql' });
    expect(postgresTarget('postgresql://fb:pw@localhost:5432/fieldbase?sslmode=disable&host=%2Ftmp')).toEqual({ url: 'postgresql://fb:pw@localhost:5432/fieldbase?sslmode=disable', host: '/tmp' });
  });
  test('a TCP URL, or a host parameter that is not a directory, is left as it is', () => {
    expect(postgresTarget('postgres://fb@127.0.0.1:5432/fieldbase')).toEqual({ url: 'postgres://fb@127.0.0.1:5432/fieldbase' });
    expect(postgresTarget('postgres://fb@db/fieldbase?sslmode=require')).toEqual({ url: 'postgres://fb@db/fieldbase?sslmode=require' });
    expect(postgresTarget('postgres://fb@db/fieldbase?host=other')).toEqual({ url: 'postgres://fb@db/fieldbase?host=other' });
  });
});
