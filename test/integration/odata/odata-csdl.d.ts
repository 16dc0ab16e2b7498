/** Types for odata-csdl (OASIS's CSDL XML → CSDL JSON converter), which ships none. */
declare module 'odata-csdl' {
  /** A CSDL JSON document (OData CSDL JSON 4.01): `$Version`, `$EntityContainer`, one member per schema namespace. */
  export type CsdlJson = { [key: string]: unknown };
  /**
   * Converts CSDL XML to CSDL JSON.
   * @param options.strict throw on the first error instead of recording it in `messages`.
   */
  export function xml2json(xml: string, options?: { lineNumbers?: boolean; annotations?: boolean; strict?: boolean; messages?: unknown[] }): CsdlJson;
}
