import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// s3rver ships no types; it is a real S3 protocol server we run on loopback for the S3 store tests.
// @ts-expect-error no declaration file
import S3rver from 's3rver';

export interface RunningS3 {
  endpoint: string;
  bucket: string;
  stop(): Promise<void>;
}

/** Starts s3rver on 127.0.0.1 (a free port) with one empty bucket, files in a temp folder. */
export async function startS3(bucket = 'fieldbase-test'): Promise<RunningS3> {
  const directory = mkdtempSync(join(tmpdir(), 'fieldbase-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] });
  const info = (await server.run()) as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${info.port}`,
    bucket,
    async stop() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
