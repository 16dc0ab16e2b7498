/**
 * A probe Worker for checking that lib/xlsform runs on workerd with no Node APIs:
 * `POST /convert?fallback=<id>` with spreadsheet bytes answers `{ xml, warnings, itemsets }` or
 * `{ error }` (422); `GET /env` says whether `process` and `Buffer` exist. Not deployed; see README.md.
 */
import { convertXlsForm } from '../../../lib/xlsform';

export default {
  async fetch(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const g = globalThis as Record<string, unknown>;
    if (url.pathname === '/env') return Response.json({ process: typeof g.process, Buffer: typeof g.Buffer });
    if (req.method !== 'POST' || url.pathname !== '/convert') return new Response('not found', { status: 404 });
    const bytes = new Uint8Array(await req.arrayBuffer());
    const started = Date.now();
    try {
      const r = convertXlsForm(bytes, { formIdFallback: url.searchParams.get('fallback') });
      return Response.json({ xml: r.xml, warnings: r.warnings, itemsets: r.itemsets }, { headers: { 'x-ms': String(Date.now() - started) } });
    } catch (e) {
      return Response.json({ error: (e as Error).message, name: (e as Error).name }, { status: 422 });
    }
  },
};
