//! Which k8s-openapi types have, under each Kubernetes version feature, the schema they have
//! under `latest`, whose schemas `k8s_types.rs` holds: a crate that enables another version
//! gets its own schema of a type that differs there by compiling.
//!
//! Generated from k8s-openapi 0.29's sources by `tests/tables.rs` (`KOPGEN_REGENERATE=1 cargo
//! test --test tables`): a type is the same when its `impl JsonSchema` and those of the types
//! it names are token for token the same.

/// The version k8s-openapi's `latest` feature selects.
pub const LATEST: &str = "v1_37";

/// The version k8s-openapi's `earliest` feature selects.
pub const EARLIEST: &str = "v1_33";

/// The other versions: bit `i` of [`same_as_latest`] stands for `VERSIONS[i]`.
pub const VERSIONS: &[&str] = &["v1_33", "v1_34", "v1_35", "v1_36"];

/// The versions in which the type at `path` has its schema under `latest`, as bits of
/// [`VERSIONS`]; 0 for a type that differs in every one (or is not k8s-openapi's).
pub fn same_as_latest(path: &str) -> u8 {
    match path {
        "k8s_openapi::api::admissionregistration::v1::ApplyConfiguration" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::AuditAnnotation" => 0b00001111,
        "k8s_openapi::api::admissionregistration::v1::ExpressionWarning" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::JSONPatch" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::MatchCondition" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::MatchResources" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::MutatingAdmissionPolicy" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::MutatingAdmissionPolicyBinding" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::MutatingAdmissionPolicyBindingSpec" => {
            0b00001000
        }
        "k8s_openapi::api::admissionregistration::v1::MutatingAdmissionPolicySpec" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::MutatingWebhook" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::Mutation" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::NamedRuleWithOperations" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::ParamKind" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::ParamRef" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::RuleWithOperations" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::ServiceReference" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::TypeChecking" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding" => {
            0b00001000
        }
        "k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBindingSpec" => {
            0b00001000
        }
        "k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicySpec" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyStatus" => {
            0b00001000
        }
        "k8s_openapi::api::admissionregistration::v1::ValidatingWebhook" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::Validation" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::Variable" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1::WebhookClientConfig" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1alpha1::ApplyConfiguration" => 0b00001111,
        "k8s_openapi::api::admissionregistration::v1alpha1::JSONPatch" => 0b00001111,
        "k8s_openapi::api::admissionregistration::v1alpha1::MatchCondition" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1alpha1::MatchResources" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1alpha1::MutatingAdmissionPolicy" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1alpha1::MutatingAdmissionPolicyBinding" => {
            0b00001000
        }
        "k8s_openapi::api::admissionregistration::v1alpha1::MutatingAdmissionPolicyBindingSpec" => {
            0b00001000
        }
        "k8s_openapi::api::admissionregistration::v1alpha1::MutatingAdmissionPolicySpec" => {
            0b00001000
        }
        "k8s_openapi::api::admissionregistration::v1alpha1::Mutation" => 0b00001111,
        "k8s_openapi::api::admissionregistration::v1alpha1::NamedRuleWithOperations" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1alpha1::ParamKind" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1alpha1::ParamRef" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1alpha1::Variable" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1beta1::ApplyConfiguration" => 0b00001110,
        "k8s_openapi::api::admissionregistration::v1beta1::JSONPatch" => 0b00001110,
        "k8s_openapi::api::admissionregistration::v1beta1::MatchCondition" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1beta1::MatchResources" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1beta1::MutatingAdmissionPolicy" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1beta1::MutatingAdmissionPolicyBinding" => {
            0b00001000
        }
        "k8s_openapi::api::admissionregistration::v1beta1::MutatingAdmissionPolicyBindingSpec" => {
            0b00001000
        }
        "k8s_openapi::api::admissionregistration::v1beta1::MutatingAdmissionPolicySpec" => {
            0b00001000
        }
        "k8s_openapi::api::admissionregistration::v1beta1::Mutation" => 0b00001110,
        "k8s_openapi::api::admissionregistration::v1beta1::NamedRuleWithOperations" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1beta1::ParamKind" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1beta1::ParamRef" => 0b00001000,
        "k8s_openapi::api::admissionregistration::v1beta1::Variable" => 0b00001000,
        "k8s_openapi::api::apiserverinternal::v1alpha1::ServerStorageVersion" => 0b00001000,
        "k8s_openapi::api::apiserverinternal::v1alpha1::StorageVersion" => 0b00001000,
        "k8s_openapi::api::apiserverinternal::v1alpha1::StorageVersionCondition" => 0b00001000,
        "k8s_openapi::api::apiserverinternal::v1alpha1::StorageVersionSpec" => 0b00001111,
        "k8s_openapi::api::apiserverinternal::v1alpha1::StorageVersionStatus" => 0b00001000,
        "k8s_openapi::api::apps::v1::DaemonSetUpdateStrategy" => 0b00001110,
        "k8s_openapi::api::apps::v1::DeploymentStrategy" => 0b00001111,
        "k8s_openapi::api::apps::v1::RollingUpdateDaemonSet" => 0b00001110,
        "k8s_openapi::api::apps::v1::RollingUpdateDeployment" => 0b00001111,
        "k8s_openapi::api::apps::v1::RollingUpdateStatefulSetStrategy" => 0b00001100,
        "k8s_openapi::api::apps::v1::StatefulSetOrdinals" => 0b00001111,
        "k8s_openapi::api::apps::v1::StatefulSetPersistentVolumeClaimRetentionPolicy" => 0b00001111,
        "k8s_openapi::api::apps::v1::StatefulSetUpdateStrategy" => 0b00001100,
        "k8s_openapi::api::authentication::v1::SelfSubjectReview" => 0b00001000,
        "k8s_openapi::api::authentication::v1::SelfSubjectReviewStatus" => 0b00001000,
        "k8s_openapi::api::authentication::v1::TokenRequestStatus" => 0b00001000,
        "k8s_openapi::api::authentication::v1::TokenReview" => 0b00001000,
        "k8s_openapi::api::authentication::v1::TokenReviewSpec" => 0b00001000,
        "k8s_openapi::api::authentication::v1::TokenReviewStatus" => 0b00001000,
        "k8s_openapi::api::authentication::v1::UserInfo" => 0b00001000,
        "k8s_openapi::api::authorization::v1::FieldSelectorAttributes" => 0b00001111,
        "k8s_openapi::api::authorization::v1::LabelSelectorAttributes" => 0b00001111,
        "k8s_openapi::api::authorization::v1::LocalSubjectAccessReview" => 0b00001000,
        "k8s_openapi::api::authorization::v1::NonResourceAttributes" => 0b00001000,
        "k8s_openapi::api::authorization::v1::NonResourceRule" => 0b00001000,
        "k8s_openapi::api::authorization::v1::ResourceAttributes" => 0b00001000,
        "k8s_openapi::api::authorization::v1::ResourceRule" => 0b00001000,
        "k8s_openapi::api::authorization::v1::SelfSubjectAccessReview" => 0b00001000,
        "k8s_openapi::api::authorization::v1::SelfSubjectAccessReviewSpec" => 0b00001000,
        "k8s_openapi::api::authorization::v1::SelfSubjectRulesReview" => 0b00001000,
        "k8s_openapi::api::authorization::v1::SelfSubjectRulesReviewSpec" => 0b00001000,
        "k8s_openapi::api::authorization::v1::SubjectAccessReview" => 0b00001000,
        "k8s_openapi::api::authorization::v1::SubjectAccessReviewSpec" => 0b00001000,
        "k8s_openapi::api::authorization::v1::SubjectAccessReviewStatus" => 0b00001000,
        "k8s_openapi::api::authorization::v1::SubjectRulesReviewStatus" => 0b00001000,
        "k8s_openapi::api::autoscaling::v1::CrossVersionObjectReference" => 0b00001111,
        "k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscalerStatus" => 0b00001111,
        "k8s_openapi::api::autoscaling::v1::ScaleSpec" => 0b00001111,
        "k8s_openapi::api::autoscaling::v1::ScaleStatus" => 0b00001111,
        "k8s_openapi::api::autoscaling::v2::ContainerResourceMetricSource" => 0b00001111,
        "k8s_openapi::api::autoscaling::v2::CrossVersionObjectReference" => 0b00001111,
        "k8s_openapi::api::autoscaling::v2::ExternalMetricSource" => 0b00001111,
        "k8s_openapi::api::autoscaling::v2::HPAScalingPolicy" => 0b00001111,
        "k8s_openapi::api::autoscaling::v2::MetricIdentifier" => 0b00001111,
        "k8s_openapi::api::autoscaling::v2::MetricSpec" => 0b00001111,
        "k8s_openapi::api::autoscaling::v2::MetricTarget" => 0b00001111,
        "k8s_openapi::api::autoscaling::v2::ObjectMetricSource" => 0b00001111,
        "k8s_openapi::api::autoscaling::v2::PodsMetricSource" => 0b00001111,
        "k8s_openapi::api::autoscaling::v2::ResourceMetricSource" => 0b00001111,
        "k8s_openapi::api::batch::v1::CronJobStatus" => 0b00001111,
        "k8s_openapi::api::batch::v1::JobCondition" => 0b00001111,
        "k8s_openapi::api::batch::v1::PodFailurePolicy" => 0b00001100,
        "k8s_openapi::api::batch::v1::PodFailurePolicyOnExitCodesRequirement" => 0b00001111,
        "k8s_openapi::api::batch::v1::PodFailurePolicyOnPodConditionsPattern" => 0b00001100,
        "k8s_openapi::api::batch::v1::PodFailurePolicyRule" => 0b00001100,
        "k8s_openapi::api::batch::v1::SuccessPolicy" => 0b00001110,
        "k8s_openapi::api::batch::v1::SuccessPolicyRule" => 0b00001111,
        "k8s_openapi::api::batch::v1::UncountedTerminatedPods" => 0b00001111,
        "k8s_openapi::api::certificates::v1::CertificateSigningRequest" => 0b00001111,
        "k8s_openapi::api::certificates::v1::CertificateSigningRequestCondition" => 0b00001111,
        "k8s_openapi::api::certificates::v1::CertificateSigningRequestSpec" => 0b00001111,
        "k8s_openapi::api::certificates::v1::CertificateSigningRequestStatus" => 0b00001111,
        "k8s_openapi::api::certificates::v1beta1::ClusterTrustBundleSpec" => 0b00001111,
        "k8s_openapi::api::certificates::v1beta1::PodCertificateRequest" => 0b00001000,
        "k8s_openapi::api::certificates::v1beta1::PodCertificateRequestSpec" => 0b00001000,
        "k8s_openapi::api::certificates::v1beta1::PodCertificateRequestStatus" => 0b00001100,
        "k8s_openapi::api::core::v1::AWSElasticBlockStoreVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::Affinity" => 0b00001110,
        "k8s_openapi::api::core::v1::AppArmorProfile" => 0b00001111,
        "k8s_openapi::api::core::v1::AttachedVolume" => 0b00001111,
        "k8s_openapi::api::core::v1::AzureDiskVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::AzureFilePersistentVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::AzureFileVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::Binding" => 0b00001111,
        "k8s_openapi::api::core::v1::CSIPersistentVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::CSIVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::Capabilities" => 0b00001111,
        "k8s_openapi::api::core::v1::CephFSPersistentVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::CephFSVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::CinderPersistentVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::CinderVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::ClientIPConfig" => 0b00001111,
        "k8s_openapi::api::core::v1::ComponentCondition" => 0b00001111,
        "k8s_openapi::api::core::v1::ComponentStatus" => 0b00001111,
        "k8s_openapi::api::core::v1::ConfigMapNodeConfigSource" => 0b00001111,
        "k8s_openapi::api::core::v1::ContainerExtendedResourceRequest" => 0b00001110,
        "k8s_openapi::api::core::v1::ContainerImage" => 0b00001111,
        "k8s_openapi::api::core::v1::ContainerPort" => 0b00001111,
        "k8s_openapi::api::core::v1::ContainerResizePolicy" => 0b00001111,
        "k8s_openapi::api::core::v1::ContainerRestartRule" => 0b00001110,
        "k8s_openapi::api::core::v1::ContainerRestartRuleOnExitCodes" => 0b00001110,
        "k8s_openapi::api::core::v1::ContainerState" => 0b00001111,
        "k8s_openapi::api::core::v1::ContainerStateRunning" => 0b00001111,
        "k8s_openapi::api::core::v1::ContainerStateTerminated" => 0b00001111,
        "k8s_openapi::api::core::v1::ContainerStateWaiting" => 0b00001111,
        "k8s_openapi::api::core::v1::ContainerUser" => 0b00001111,
        "k8s_openapi::api::core::v1::DaemonEndpoint" => 0b00001111,
        "k8s_openapi::api::core::v1::EndpointAddress" => 0b00001111,
        "k8s_openapi::api::core::v1::EndpointPort" => 0b00001111,
        "k8s_openapi::api::core::v1::EndpointSubset" => 0b00001111,
        "k8s_openapi::api::core::v1::Endpoints" => 0b00001111,
        "k8s_openapi::api::core::v1::Event" => 0b00001111,
        "k8s_openapi::api::core::v1::EventSeries" => 0b00001111,
        "k8s_openapi::api::core::v1::EventSource" => 0b00001111,
        "k8s_openapi::api::core::v1::ExecAction" => 0b00001111,
        "k8s_openapi::api::core::v1::FCVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::FileKeySelector" => 0b00001110,
        "k8s_openapi::api::core::v1::FlexPersistentVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::FlexVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::FlockerVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::GCEPersistentDiskVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::GitRepoVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::GlusterfsPersistentVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::GlusterfsVolumeSource" => 0b00001110,
        "k8s_openapi::api::core::v1::HTTPHeader" => 0b00001111,
        "k8s_openapi::api::core::v1::HostAlias" => 0b00001111,
        "k8s_openapi::api::core::v1::HostIP" => 0b00001111,
        "k8s_openapi::api::core::v1::HostPathVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::ISCSIPersistentVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::ISCSIVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::ImageVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::ImageVolumeStatus" => 0b00001000,
        "k8s_openapi::api::core::v1::LimitRange" => 0b00001111,
        "k8s_openapi::api::core::v1::LimitRangeItem" => 0b00001111,
        "k8s_openapi::api::core::v1::LimitRangeSpec" => 0b00001111,
        "k8s_openapi::api::core::v1::LinuxContainerUser" => 0b00001111,
        "k8s_openapi::api::core::v1::LoadBalancerIngress" => 0b00001111,
        "k8s_openapi::api::core::v1::LoadBalancerStatus" => 0b00001111,
        "k8s_openapi::api::core::v1::LocalObjectReference" => 0b00001111,
        "k8s_openapi::api::core::v1::LocalVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::ModifyVolumeStatus" => 0b00001111,
        "k8s_openapi::api::core::v1::NFSVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::Namespace" => 0b00001111,
        "k8s_openapi::api::core::v1::NamespaceCondition" => 0b00001111,
        "k8s_openapi::api::core::v1::NamespaceSpec" => 0b00001111,
        "k8s_openapi::api::core::v1::NamespaceStatus" => 0b00001111,
        "k8s_openapi::api::core::v1::NodeAddress" => 0b00001111,
        "k8s_openapi::api::core::v1::NodeAffinity" => 0b00001111,
        "k8s_openapi::api::core::v1::NodeCondition" => 0b00001111,
        "k8s_openapi::api::core::v1::NodeConfigSource" => 0b00001111,
        "k8s_openapi::api::core::v1::NodeConfigStatus" => 0b00001111,
        "k8s_openapi::api::core::v1::NodeDaemonEndpoints" => 0b00001111,
        "k8s_openapi::api::core::v1::NodeFeatures" => 0b00001111,
        "k8s_openapi::api::core::v1::NodeRuntimeHandler" => 0b00001111,
        "k8s_openapi::api::core::v1::NodeRuntimeHandlerFeatures" => 0b00001111,
        "k8s_openapi::api::core::v1::NodeSelector" => 0b00001111,
        "k8s_openapi::api::core::v1::NodeSelectorRequirement" => 0b00001111,
        "k8s_openapi::api::core::v1::NodeSelectorTerm" => 0b00001111,
        "k8s_openapi::api::core::v1::NodeSwapStatus" => 0b00001111,
        "k8s_openapi::api::core::v1::ObjectFieldSelector" => 0b00001111,
        "k8s_openapi::api::core::v1::ObjectReference" => 0b00001111,
        "k8s_openapi::api::core::v1::PersistentVolume" => 0b00001000,
        "k8s_openapi::api::core::v1::PersistentVolumeClaimCondition" => 0b00001111,
        "k8s_openapi::api::core::v1::PersistentVolumeClaimVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::PersistentVolumeSpec" => 0b00001000,
        "k8s_openapi::api::core::v1::PersistentVolumeStatus" => 0b00001111,
        "k8s_openapi::api::core::v1::PhotonPersistentDiskVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::PodAffinity" => 0b00001111,
        "k8s_openapi::api::core::v1::PodAffinityTerm" => 0b00001111,
        "k8s_openapi::api::core::v1::PodAntiAffinity" => 0b00001110,
        "k8s_openapi::api::core::v1::PodCondition" => 0b00001000,
        "k8s_openapi::api::core::v1::PodDNSConfig" => 0b00001111,
        "k8s_openapi::api::core::v1::PodDNSConfigOption" => 0b00001111,
        "k8s_openapi::api::core::v1::PodExtendedResourceClaimStatus" => 0b00001110,
        "k8s_openapi::api::core::v1::PodIP" => 0b00001111,
        "k8s_openapi::api::core::v1::PodOS" => 0b00001111,
        "k8s_openapi::api::core::v1::PodReadinessGate" => 0b00001111,
        "k8s_openapi::api::core::v1::PodResourceClaim" => 0b00001000,
        "k8s_openapi::api::core::v1::PodResourceClaimStatus" => 0b00001000,
        "k8s_openapi::api::core::v1::PodSchedulingGate" => 0b00001111,
        "k8s_openapi::api::core::v1::PodSchedulingGroup" => 0b00001000,
        "k8s_openapi::api::core::v1::PortStatus" => 0b00001111,
        "k8s_openapi::api::core::v1::PortworxVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::PreferredSchedulingTerm" => 0b00001111,
        "k8s_openapi::api::core::v1::QuobyteVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::RBDPersistentVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::RBDVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::ReplicationControllerCondition" => 0b00001111,
        "k8s_openapi::api::core::v1::ReplicationControllerStatus" => 0b00001111,
        "k8s_openapi::api::core::v1::ResourceClaim" => 0b00001111,
        "k8s_openapi::api::core::v1::ResourceFieldSelector" => 0b00001111,
        "k8s_openapi::api::core::v1::ResourceHealth" => 0b00001000,
        "k8s_openapi::api::core::v1::ResourceQuota" => 0b00001111,
        "k8s_openapi::api::core::v1::ResourceQuotaSpec" => 0b00001111,
        "k8s_openapi::api::core::v1::ResourceQuotaStatus" => 0b00001111,
        "k8s_openapi::api::core::v1::ResourceRequirements" => 0b00001110,
        "k8s_openapi::api::core::v1::SELinuxOptions" => 0b00001111,
        "k8s_openapi::api::core::v1::ScaleIOPersistentVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::ScaleIOVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::ScopeSelector" => 0b00001111,
        "k8s_openapi::api::core::v1::ScopedResourceSelectorRequirement" => 0b00001111,
        "k8s_openapi::api::core::v1::SeccompProfile" => 0b00001111,
        "k8s_openapi::api::core::v1::Secret" => 0b00001111,
        "k8s_openapi::api::core::v1::SecretEnvSource" => 0b00001111,
        "k8s_openapi::api::core::v1::SecretKeySelector" => 0b00001111,
        "k8s_openapi::api::core::v1::SecretReference" => 0b00001111,
        "k8s_openapi::api::core::v1::SecurityContext" => 0b00001000,
        "k8s_openapi::api::core::v1::Service" => 0b00001111,
        "k8s_openapi::api::core::v1::ServiceAccount" => 0b00001111,
        "k8s_openapi::api::core::v1::ServicePort" => 0b00001111,
        "k8s_openapi::api::core::v1::ServiceSpec" => 0b00001111,
        "k8s_openapi::api::core::v1::ServiceStatus" => 0b00001111,
        "k8s_openapi::api::core::v1::SessionAffinityConfig" => 0b00001111,
        "k8s_openapi::api::core::v1::SleepAction" => 0b00001111,
        "k8s_openapi::api::core::v1::StorageOSPersistentVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::StorageOSVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::Sysctl" => 0b00001111,
        "k8s_openapi::api::core::v1::TCPSocketAction" => 0b00001111,
        "k8s_openapi::api::core::v1::Taint" => 0b00001110,
        "k8s_openapi::api::core::v1::Toleration" => 0b00001100,
        "k8s_openapi::api::core::v1::TopologySelectorLabelRequirement" => 0b00001111,
        "k8s_openapi::api::core::v1::TopologySelectorTerm" => 0b00001111,
        "k8s_openapi::api::core::v1::TopologySpreadConstraint" => 0b00001111,
        "k8s_openapi::api::core::v1::TypedLocalObjectReference" => 0b00001111,
        "k8s_openapi::api::core::v1::TypedObjectReference" => 0b00001111,
        "k8s_openapi::api::core::v1::VolumeDevice" => 0b00001111,
        "k8s_openapi::api::core::v1::VolumeMountStatus" => 0b00001000,
        "k8s_openapi::api::core::v1::VolumeNodeAffinity" => 0b00001111,
        "k8s_openapi::api::core::v1::VolumeResourceRequirements" => 0b00001111,
        "k8s_openapi::api::core::v1::VolumeStatus" => 0b00001000,
        "k8s_openapi::api::core::v1::VsphereVirtualDiskVolumeSource" => 0b00001111,
        "k8s_openapi::api::core::v1::WeightedPodAffinityTerm" => 0b00001111,
        "k8s_openapi::api::core::v1::WindowsSecurityContextOptions" => 0b00001111,
        "k8s_openapi::api::discovery::v1::Endpoint" => 0b00001100,
        "k8s_openapi::api::discovery::v1::EndpointConditions" => 0b00001111,
        "k8s_openapi::api::discovery::v1::EndpointHints" => 0b00001100,
        "k8s_openapi::api::discovery::v1::EndpointPort" => 0b00001111,
        "k8s_openapi::api::discovery::v1::EndpointSlice" => 0b00001000,
        "k8s_openapi::api::discovery::v1::ForNode" => 0b00001111,
        "k8s_openapi::api::discovery::v1::ForZone" => 0b00001111,
        "k8s_openapi::api::events::v1::EventSeries" => 0b00001111,
        "k8s_openapi::api::flowcontrol::v1::ExemptPriorityLevelConfiguration" => 0b00001111,
        "k8s_openapi::api::flowcontrol::v1::FlowDistinguisherMethod" => 0b00001111,
        "k8s_openapi::api::flowcontrol::v1::FlowSchemaSpec" => 0b00001111,
        "k8s_openapi::api::flowcontrol::v1::GroupSubject" => 0b00001111,
        "k8s_openapi::api::flowcontrol::v1::LimitResponse" => 0b00001111,
        "k8s_openapi::api::flowcontrol::v1::NonResourcePolicyRule" => 0b00001111,
        "k8s_openapi::api::flowcontrol::v1::PolicyRulesWithSubjects" => 0b00001111,
        "k8s_openapi::api::flowcontrol::v1::PriorityLevelConfigurationReference" => 0b00001111,
        "k8s_openapi::api::flowcontrol::v1::QueuingConfiguration" => 0b00001111,
        "k8s_openapi::api::flowcontrol::v1::ResourcePolicyRule" => 0b00001111,
        "k8s_openapi::api::flowcontrol::v1::ServiceAccountSubject" => 0b00001111,
        "k8s_openapi::api::flowcontrol::v1::Subject" => 0b00001111,
        "k8s_openapi::api::flowcontrol::v1::UserSubject" => 0b00001111,
        "k8s_openapi::api::networking::v1::HTTPIngressPath" => 0b00001111,
        "k8s_openapi::api::networking::v1::HTTPIngressRuleValue" => 0b00001111,
        "k8s_openapi::api::networking::v1::IPBlock" => 0b00001111,
        "k8s_openapi::api::networking::v1::IngressBackend" => 0b00001111,
        "k8s_openapi::api::networking::v1::IngressClassParametersReference" => 0b00001111,
        "k8s_openapi::api::networking::v1::IngressClassSpec" => 0b00001111,
        "k8s_openapi::api::networking::v1::IngressLoadBalancerIngress" => 0b00001111,
        "k8s_openapi::api::networking::v1::IngressLoadBalancerStatus" => 0b00001111,
        "k8s_openapi::api::networking::v1::IngressPortStatus" => 0b00001111,
        "k8s_openapi::api::networking::v1::IngressServiceBackend" => 0b00001111,
        "k8s_openapi::api::networking::v1::IngressStatus" => 0b00001111,
        "k8s_openapi::api::networking::v1::IngressTLS" => 0b00001111,
        "k8s_openapi::api::networking::v1::NetworkPolicyEgressRule" => 0b00001111,
        "k8s_openapi::api::networking::v1::NetworkPolicyIngressRule" => 0b00001111,
        "k8s_openapi::api::networking::v1::NetworkPolicyPeer" => 0b00001111,
        "k8s_openapi::api::networking::v1::NetworkPolicyPort" => 0b00001111,
        "k8s_openapi::api::networking::v1::NetworkPolicySpec" => 0b00001110,
        "k8s_openapi::api::networking::v1::ServiceBackendPort" => 0b00001111,
        "k8s_openapi::api::networking::v1::ServiceCIDRStatus" => 0b00001111,
        "k8s_openapi::api::node::v1::Overhead" => 0b00001111,
        "k8s_openapi::api::node::v1::Scheduling" => 0b00001100,
        "k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus" => 0b00001000,
        "k8s_openapi::api::resource::v1::CapacityRequirements" => 0b00001110,
        "k8s_openapi::api::resource::v1::Counter" => 0b00001110,
        "k8s_openapi::api::resource::v1::CounterSet" => 0b00001100,
        "k8s_openapi::api::resource::v1::DeviceAttribute" => 0b00001000,
        "k8s_openapi::api::resource::v1::DeviceConstraint" => 0b00001000,
        "k8s_openapi::api::resource::v1::DeviceTaint" => 0b00001000,
        "k8s_openapi::api::resource::v1::DeviceToleration" => 0b00001110,
        "k8s_openapi::api::resource::v1::NetworkDeviceData" => 0b00001000,
        "k8s_openapi::api::resource::v1::ResourceClaimConsumerReference" => 0b00001110,
        "k8s_openapi::api::resource::v1alpha3::DeviceTaint" => 0b00001000,
        "k8s_openapi::api::resource::v1alpha3::DeviceTaintRule" => 0b00001000,
        "k8s_openapi::api::resource::v1alpha3::DeviceTaintRuleSpec" => 0b00001000,
        "k8s_openapi::api::resource::v1alpha3::DeviceTaintRuleStatus" => 0b00001100,
        "k8s_openapi::api::resource::v1alpha3::DeviceTaintSelector" => 0b00001100,
        "k8s_openapi::api::resource::v1beta1::CapacityRequirements" => 0b00001110,
        "k8s_openapi::api::resource::v1beta1::Counter" => 0b00001111,
        "k8s_openapi::api::resource::v1beta1::CounterSet" => 0b00001100,
        "k8s_openapi::api::resource::v1beta1::DeviceAttribute" => 0b00001000,
        "k8s_openapi::api::resource::v1beta1::DeviceConstraint" => 0b00001000,
        "k8s_openapi::api::resource::v1beta1::DeviceTaint" => 0b00001000,
        "k8s_openapi::api::resource::v1beta1::DeviceToleration" => 0b00001111,
        "k8s_openapi::api::resource::v1beta1::NetworkDeviceData" => 0b00001000,
        "k8s_openapi::api::resource::v1beta1::ResourceClaimConsumerReference" => 0b00001111,
        "k8s_openapi::api::resource::v1beta2::CapacityRequirements" => 0b00001110,
        "k8s_openapi::api::resource::v1beta2::Counter" => 0b00001111,
        "k8s_openapi::api::resource::v1beta2::CounterSet" => 0b00001100,
        "k8s_openapi::api::resource::v1beta2::DeviceAttribute" => 0b00001000,
        "k8s_openapi::api::resource::v1beta2::DeviceConstraint" => 0b00001000,
        "k8s_openapi::api::resource::v1beta2::DeviceTaint" => 0b00001000,
        "k8s_openapi::api::resource::v1beta2::DeviceTaintRule" => 0b00001000,
        "k8s_openapi::api::resource::v1beta2::DeviceTaintRuleSpec" => 0b00001000,
        "k8s_openapi::api::resource::v1beta2::DeviceTaintRuleStatus" => 0b00001000,
        "k8s_openapi::api::resource::v1beta2::DeviceTaintSelector" => 0b00001000,
        "k8s_openapi::api::resource::v1beta2::DeviceToleration" => 0b00001111,
        "k8s_openapi::api::resource::v1beta2::NetworkDeviceData" => 0b00001000,
        "k8s_openapi::api::resource::v1beta2::ResourceClaimConsumerReference" => 0b00001111,
        "k8s_openapi::api::storage::v1::CSINodeDriver" => 0b00001111,
        "k8s_openapi::api::storage::v1::CSINodeSpec" => 0b00001111,
        "k8s_openapi::api::storage::v1::TokenRequest" => 0b00001111,
        "k8s_openapi::api::storage::v1::VolumeAttachmentSource" => 0b00001000,
        "k8s_openapi::api::storage::v1::VolumeAttachmentSpec" => 0b00001000,
        "k8s_openapi::api::storage::v1::VolumeAttachmentStatus" => 0b00001000,
        "k8s_openapi::api::storage::v1::VolumeError" => 0b00001000,
        "k8s_openapi::api::storage::v1::VolumeNodeResources" => 0b00001111,
        "k8s_openapi::api::storagemigration::v1beta1::StorageVersionMigration" => 0b00001100,
        "k8s_openapi::api::storagemigration::v1beta1::StorageVersionMigrationSpec" => 0b00001100,
        "k8s_openapi::api::storagemigration::v1beta1::StorageVersionMigrationStatus" => 0b00001100,
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceColumnDefinition" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceConversion" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition" => {
            0b00001100
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionCondition" => {
            0b00001100
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionNames" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionSpec" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionStatus" => {
            0b00001100
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceSubresourceScale" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceSubresourceStatus" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceSubresources" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceValidation" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ExternalDocumentation" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSON" => 0b00001111,
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrArray" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrBool" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrStringArray" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::SelectableField" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ServiceReference" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::WebhookClientConfig" => {
            0b00001111
        }
        "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::WebhookConversion" => {
            0b00001111
        }
        "k8s_openapi::apimachinery::pkg::api::resource::Quantity" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::APIGroup" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::APIGroupList" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::APIVersions" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldSelectorRequirement" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::GroupResource" => 0b00001100,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::GroupVersionForDiscovery" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta" => 0b00001000,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::Patch" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::Preconditions" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::ServerAddressByClientCIDR" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::ShardInfo" => 0b00001000,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::Status" => 0b00001000,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::StatusCause" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::StatusDetails" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::apis::meta::v1::Time" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::util::intstr::IntOrString" => 0b00001111,
        "k8s_openapi::apimachinery::pkg::version::Info" => 0b00001111,
        "k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService" => 0b00001111,
        "k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIServiceCondition" => {
            0b00001111
        }
        "k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIServiceSpec" => {
            0b00001111
        }
        "k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIServiceStatus" => {
            0b00001111
        }
        "k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::ServiceReference" => {
            0b00001111
        }
        _ => 0,
    }
}
