package fbc

// Rules name what a ValidationError violates, one per check of
// operator-registry's loading (declcfg.LoadFS), conversion
// (declcfg.ConvertToModel) and model validation (model.Validate), so that
// callers and the differential tests (test/oracle) can match a problem
// without parsing its message. RuleParse is not a ValidationError: it is
// what an error returned by Parse stands for.
const (
	RuleParse         = "parse"          // not YAML/JSON, or bad meta keys
	RuleSchemaMissing = "schema-missing" // object without a schema
	RuleDecode        = "decode"         // field of the wrong type
	RuleProperty      = "property"       // bundle property value opm cannot parse

	RulePackageName      = "package-name"
	RulePackageDuplicate = "package-duplicate"
	RuleChannelPackage   = "channel-package"
	RuleChannelName      = "channel-name"
	RuleChannelDuplicate = "channel-duplicate"
	RuleEntryDuplicate   = "entry-duplicate"
	RuleBundlePackage    = "bundle-package"
	RuleBundleDuplicate  = "bundle-duplicate"
	RulePackageProperty  = "package-property" // not exactly one olm.package
	RulePackageMismatch  = "package-mismatch"
	RuleVersion          = "version"
	RuleBundleUnlisted   = "bundle-unlisted" // in no channel
	RuleBundleMissing    = "bundle-missing"  // channel entry without a bundle

	RuleDeprecationPackage   = "deprecation-package"
	RuleDeprecationDuplicate = "deprecation-duplicate"
	RuleDeprecationReference = "deprecation-reference"
	RuleDeprecationMessage   = "deprecation-message"

	RuleDefaultChannel   = "default-channel"
	RulePackageChannels  = "package-channels"
	RuleVersionDuplicate = "version-duplicate"
	RuleChannelEmpty     = "channel-empty"
	RuleHead             = "head"
	RuleCycle            = "cycle"
	RuleStranded         = "stranded"
	RuleSkipEmpty        = "skip-empty"
	RuleImage            = "image"
	RuleBundleName       = "bundle-name"
)
