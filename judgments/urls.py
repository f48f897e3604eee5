from django.urls import path

from judgments import views

app_name = "judgments"
urlpatterns = [
    path("grade/", views.grade, name="grade"),
    path("grade/slots/<int:slot_id>/", views.slot, name="slot"),
    path("grade/slots/<int:slot_id>/skip/", views.slot_skip, name="skip"),
    path("grade/evaluations/<int:evaluation_id>/", views.evaluation_grade,
         name="evaluation_grade"),
    path("feedback/evaluations/<int:evaluation_id>/", views.feedback_list, name="feedback"),
    path("feedback/slots/<int:slot_id>/grade/", views.feedback_lead_grade, name="lead_grade"),
    path("feedback/slots/<int:slot_id>/reset/", views.feedback_reset, name="reset"),
    path("pool/import/", views.pool_import, name="pool_import"),
    path("scales/", views.scale_list, name="scales"),
    path("scales/new/", views.scale_create, name="scale_create"),
    path("scales/<int:scale_id>/", views.scale_edit, name="scale_edit"),
    path("scales/<int:scale_id>/delete/", views.scale_delete, name="scale_delete"),
    path("transformers/edit/", views.transformer_edit, name="transformer_edit"),
    path("transformers/<int:transformer_id>/delete/", views.transformer_delete,
         name="transformer_delete"),
    path("grader-tags/", views.grader_tags, name="grader_tags"),
    path("grader-tags/<int:user_id>/", views.grader_tags_update, name="grader_tags_update"),
]
