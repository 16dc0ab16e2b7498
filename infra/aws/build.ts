/** `npm run build:lambda`: bundles each group's lambda.ts into dist/lambda/<group>/index.mjs (esbuild). */
import { build } from 'esbuild';
import { lambdaFunctions } from './functions';

for (const fn of lambdaFunctions) {
  await build({
    entryPoints: [fn.entry],
    outfile: `dist/lambda/${fn.group}/index.mjs`,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    sourcemap: true,
    // The embedded database is for local use; Lambda always has DATABASE_URL.
    external: ['@electric-sql/pglite', '@aws-sdk/*'],
    banner: { js: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  console.log(`built dist/lambda/${fn.group}/index.mjs`);
}
