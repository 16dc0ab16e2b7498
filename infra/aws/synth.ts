/**
 * `npm run synth:aws`: builds every Lambda bundle and synthesizes the AWS stack (infra/aws/cdk)
 * into a temporary folder, offline: no credentials, no network. Prints the template's path and
 * what it defines. `--out <dir>` keeps the cloud assembly there instead.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildLambdaBundles } from './build';
import { synthesize } from './cdk/stack';

/**
 * Builds the bundles into `<dir>/bundles` and synthesizes into `<dir>/cdk.out`.
 * @returns the template, its path and a count of resources by type.
 */
export async function synthOffline(dir: string, bundleDir?: string) {
  const bundles = bundleDir ?? join(dir, 'bundles');
  if (!bundleDir) await buildLambdaBundles({ outDir: bundles });
  const { template, templatePath } = synthesize({ bundleDir: bundles }, join(dir, 'cdk.out'));
  const counts: Record<string, number> = {};
  for (const r of Object.values(template.Resources as Record<string, { Type: string }>)) counts[r.Type] = (counts[r.Type] ?? 0) + 1;
  return { template, templatePath, counts };
}

if (process.argv[1] && resolve(process.argv[1]).endsWith('infra/aws/synth.ts')) {
  const i = process.argv.indexOf('--out');
  const dir = i > 0 ? resolve(process.argv[i + 1]!) : mkdtempSync(join(tmpdir(), 'fieldbase-synth-'));
  // No credentials or region are needed (an environment-agnostic stack with no lookups).
  const { templatePath, counts } = await synthOffline(dir);
  console.log(`Synthesized ${templatePath}`);
  for (const [type, n] of Object.entries(counts).sort()) console.log(`  ${String(n).padStart(3)} ${type}`);
}
