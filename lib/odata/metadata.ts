/**
 * The OData service document and `$metadata` (EDMX 4.0) of a form, in Central's exact layout
 * (shared/fixtures/central-outputs/<form>/odata/service-document.json and metadata.xml). Pure.
 */
import { sanitizeOdataIdentifier } from '../xforms/parse-form';
import { edmType, type ODataModel, type ODataNode, type ODataTable } from './model';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** `{ @odata.context, value: [{ name, kind: 'EntitySet', url }] }` for every table. */
export function serviceDocument(model: ODataModel, serviceUrl: string) {
  return {
    '@odata.context': `${serviceUrl}/$metadata`,
    value: model.tables.map((t) => ({ name: t.name, kind: 'EntitySet', url: t.name })),
  };
}

function properties(nodes: ODataNode[], ns: string, indent: string): string {
  let out = '';
  for (const n of nodes) {
    const name = esc(n.name);
    if (n.kind === 'leaf') out += `${indent}<Property Name="${name}" Type="${edmType(n.type)}"/>\n`;
    else if (n.kind === 'group') out += `${indent}<Property Name="${name}" Type="${esc(ns)}.${esc(groupTypeName(n))}"/>\n`;
    else out += `${indent}<NavigationProperty Name="${name}" Type="Collection(${esc(ns)}.Submissions.${esc(groupTypeName(n))})"/>\n`;
  }
  return out;
}

/** The dotted OData name of a group or repeat path (`plural.nested_repeat`). */
const groupTypeName = (n: ODataNode) => n.path.slice(1).split('/').map(sanitizeOdataIdentifier).join('.');

function entityType(t: ODataTable, ns: string): string {
  let out = `      <EntityType Name="${esc(t.name)}">\n        <Key><PropertyRef Name="__id"/></Key>\n        <Property Name="__id" Type="Edm.String"/>\n`;
  out += t.parentIdName == null
    ? '        <Property Name="__system" Type="org.opendatakit.submission.metadata"/>\n'
    : `        <Property Name="${esc(t.parentIdName)}" Type="Edm.String"/>\n`;
  return `${out}${properties(t.children, ns, '        ')}      </EntityType>\n`;
}

const SYSTEM_SCHEMA = `    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="org.opendatakit.submission">
      <ComplexType Name="metadata">
        <Property Name="submissionDate" Type="Edm.DateTimeOffset"/>
        <Property Name="updatedAt" Type="Edm.DateTimeOffset"/>
        <Property Name="deletedAt" Type="Edm.DateTimeOffset"/>
        <Property Name="submitterId" Type="Edm.String"/>
        <Property Name="submitterName" Type="Edm.String"/>
        <Property Name="attachmentsPresent" Type="Edm.Int64"/>
        <Property Name="attachmentsExpected" Type="Edm.Int64"/>
        <Property Name="status" Type="org.opendatakit.submission.Status"/>
        <Property Name="reviewState" Type="org.opendatakit.submission.ReviewState"/>
        <Property Name="deviceId" Type="Edm.String"/>
        <Property Name="edits" Type="Edm.Int64"/>
        <Property Name="formVersion" Type="Edm.String"/>
      </ComplexType>
      <EnumType Name="Status">
        <Member Name="notDecrypted"/>
        <Member Name="missingEncryptedFormData"/>
      </EnumType>
      <EnumType Name="ReviewState">
        <Member Name="hasIssues"/>
        <Member Name="edited"/>
        <Member Name="rejected"/>
        <Member Name="approved"/>
      </EnumType>
    </Schema>
`;

/**
 * The EDMX document (GET F.svc/$metadata): the system schema (`org.opendatakit.submission`), then
 * `org.opendatakit.user.<xmlFormId>` with one EntityType per table, the group ComplexTypes and the
 * EntityContainer with Central's capability annotations on `Submissions`.
 */
export function metadataXml(model: ODataModel): string {
  const ns = `org.opendatakit.user.${sanitizeOdataIdentifier(model.xmlFormId)}`;
  let out = '<?xml version="1.0" encoding="UTF-8"?>\n<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">\n  <edmx:DataServices>\n';
  out += SYSTEM_SCHEMA;
  out += `    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="${esc(ns)}">\n`;
  for (const t of model.tables) out += entityType(t, ns);
  for (const c of model.complexTypes) {
    out += `      <ComplexType Name="${esc(c.name)}">\n${properties(c.node.children, ns, '        ')}      </ComplexType>\n`;
  }
  const root = model.tables[0]!;
  out += `      <EntityContainer Name="${esc(model.xmlFormId)}">
        <EntitySet Name="Submissions" EntityType="${esc(ns)}.Submissions">
          <Annotation Term="Org.OData.Capabilities.V1.ConformanceLevel" EnumMember="Org.OData.Capabilities.V1.ConformanceLevelType/Minimal"/>
          <Annotation Term="Org.OData.Capabilities.V1.BatchSupported" Bool="false"/>
          <Annotation Term="Org.OData.Capabilities.V1.CountRestrictions">
            <Record><PropertyValue Property="Countable" Bool="true"/></Record>
          </Annotation>
          <Annotation Term="Org.OData.Capabilities.V1.FilterFunctions">
            <Record>
              <PropertyValue Property="NonCountableProperties">
                <Collection>
                  <String>eq</String>
                </Collection>
              </PropertyValue>
            </Record>
          </Annotation>
          <Annotation Term="Org.OData.Capabilities.V1.FilterFunctions">
            <Record>
              <PropertyValue Property="Filterable" Bool="true"/>
              <PropertyValue Property="RequiresFilter" Bool="false"/>
              <PropertyValue Property="NonFilterableProperties">
                <Collection>
${root.children.map((n) => `                  <PropertyPath>${esc(n.name)}</PropertyPath>\n`).join('')}                </Collection>
              </PropertyValue>
            </Record>
          </Annotation>
          <Annotation Term="Org.OData.Capabilities.V1.SortRestrictions">
            <Record><PropertyValue Property="Sortable" Bool="false"/></Record>
          </Annotation>
          <Annotation Term="Org.OData.Capabilities.V1.ExpandRestrictions">
            <Record><PropertyValue Property="Expandable" Bool="false"/></Record>
          </Annotation>
        </EntitySet>
`;
  for (const t of model.tables.slice(1)) out += `        <EntitySet Name="${esc(t.name)}" EntityType="${esc(ns)}.${esc(t.name)}">\n        </EntitySet>\n`;
  out += '      </EntityContainer>\n    </Schema>\n  </edmx:DataServices>\n</edmx:Edmx>';
  return out;
}
