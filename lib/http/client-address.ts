import type { Context } from 'hono';
import type { AppEnv } from './app';

/**
 * The client's network address, for login throttling: with TRUST_PROXY, the first hop of
 * `X-Forwarded-For` (the proxy sets it); on the Node server, the socket's peer (`env.incoming`
 * from @hono/node-server); on Lambda, the API Gateway source IP; on Workers, `CF-Connecting-IP`
 * (set by Cloudflare, which drops a client's own). Null when none is known. Pure: reads the request.
 */
export function clientAddress(c: Context<AppEnv>): string | null {
  const env = (c.env ?? {}) as Record<string, unknown>;
  if (c.var.ctx?.config.TRUST_PROXY === true) {
    const forwarded = c.req.header('x-forwarded-for')?.split(',')[0]?.trim();
    if (forwarded) return forwarded;
  }
  const incoming = env.incoming as { socket?: { remoteAddress?: string } } | undefined;
  if (incoming?.socket?.remoteAddress) return incoming.socket.remoteAddress;
  const event = env.event as { requestContext?: { http?: { sourceIp?: string }; identity?: { sourceIp?: string } } } | undefined;
  const lambda = event?.requestContext?.http?.sourceIp ?? event?.requestContext?.identity?.sourceIp;
  if (lambda) return lambda;
  if (incoming === undefined && event === undefined) return c.req.header('cf-connecting-ip') ?? null;
  return null;
}
